"""An agent's spans diagnosed: the run read from the OTLP file, its model calls kept and
diagnosed as recorded traffic, and the run's own analysis beside them."""

from __future__ import annotations

from pathlib import Path

from latdoc.features.agent.analysis import analyse_agent
from latdoc.features.agent.render import ShownAgentDiagnosis
from latdoc.features.diagnose import ShownDiagnosis, diagnose_spans
from latdoc.model import Priorities
from latdoc.reference import ReferenceProfile
from latdoc.store import Store
from latdoc.workload.otlp import read_otlp_file


def diagnose_otlp_file(
    store: Store,
    path: Path | str,
    *,
    prompt_tokens: int | None = None,
    priorities: Priorities | None = None,
    reference: ReferenceProfile | None = None,
) -> ShownDiagnosis | ShownAgentDiagnosis:
    """The spans of an OTLP file diagnosed (:func:`~latdoc.features.diagnose.diagnose_spans`),
    led by the agent's run where they hold one."""
    traffic = read_otlp_file(path)
    run = diagnose_spans(
        store,
        traffic,
        Path(path).name,
        prompt_tokens=prompt_tokens,
        priorities=priorities,
        reference=reference,
    )
    shown = ShownDiagnosis(run)
    agent = analyse_agent(traffic.agent) if traffic.agent else None
    return shown if agent is None else ShownAgentDiagnosis(agent, shown)
