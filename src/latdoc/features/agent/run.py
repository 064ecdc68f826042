"""An agent's spans diagnosed: the run read from the OTLP file, its model calls kept and
diagnosed as recorded traffic with its span tree in the run's meta, and the run's own
analysis beside them; a stored run shown again the same way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from latdoc.features.agent.analysis import analyse_agent
from latdoc.features.agent.render import ShownAgentDiagnosis
from latdoc.features.diagnose import ShownDiagnosis, diagnose_spans, diagnose_traffic
from latdoc.model import Priorities
from latdoc.records import Sample
from latdoc.reference import ReferenceProfile
from latdoc.store import RunInfo, Store
from latdoc.workload.otlp import AgentSpan, read_otlp_file

AGENT_META = "agent_spans"
"""The run's meta key holding its span tree (:func:`spans_to_meta`)."""
_FIELDS = ("role", "name", "trace_id", "span_id", "parent_id", "start_ns", "end_ns")
_NAMED = frozenset({"tool", "agent", "model"})


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
    agent = analyse_agent(traffic.agent) if traffic.agent else None
    meta = {} if agent is None else {AGENT_META: spans_to_meta(traffic.agent, traffic.traces)}
    run = diagnose_spans(
        store,
        traffic,
        Path(path).name,
        prompt_tokens=prompt_tokens,
        priorities=priorities,
        reference=reference,
        meta=meta,
    )
    shown = ShownDiagnosis(run)
    return shown if agent is None else ShownAgentDiagnosis(agent, shown)


def shown_instrumented(store: Store, info: RunInfo) -> ShownDiagnosis | ShownAgentDiagnosis:
    """A stored run of recorded traffic diagnosed again, led by its agent's run where the
    run kept one."""
    run = diagnose_traffic(store, info.run_id)
    shown = ShownDiagnosis(run)
    kept = info.meta.get(AGENT_META)
    if not isinstance(kept, list):
        return shown
    agent = analyse_agent(spans_from_meta(kept, run.samples))
    return shown if agent is None else ShownAgentDiagnosis(agent, shown)


def spans_to_meta(spans: Sequence[AgentSpan], traces: Sequence[object]) -> list[dict[str, Any]]:
    """The tree as plain data: each span's fields (the names of tools, agents and model
    calls only), a model call's trace as the index of its sample (its place among
    ``traces``)."""
    index = {id(trace): n for n, trace in enumerate(traces)}
    return [
        {
            **{name: getattr(span, name) for name in _FIELDS},
            # Only a tool's and an agent's names are shown; another span's name (the
            # application's own) is not kept.
            "name": span.name if span.role in _NAMED else "",
            "sample": None if span.trace is None else index.get(id(span.trace)),
        }
        for span in spans
    ]


def spans_from_meta(kept: list[Any], samples: Sequence[Sample]) -> list[AgentSpan]:
    """The tree :func:`spans_to_meta` kept, each model call with its sample's trace; an
    entry that is not one is left out."""
    by_index = {s.index: s.trace for s in samples}
    out = []
    for entry in kept:
        if not isinstance(entry, Mapping):
            continue
        texts = [entry.get(name) for name in ("role", "name", "trace_id", "span_id")]
        parent, start, end = entry.get("parent_id"), entry.get("start_ns"), entry.get("end_ns")
        sample = entry.get("sample")
        if (
            not all(isinstance(t, str) for t in texts)
            or not (parent is None or isinstance(parent, str))
            or not isinstance(start, int)
            or not isinstance(end, int)
        ):
            continue
        role, name, trace_id, span_id = (str(t) for t in texts)
        trace = by_index.get(sample) if isinstance(sample, int) else None
        out.append(AgentSpan(role, name, trace_id, span_id, parent, start, end, trace))
    return out
