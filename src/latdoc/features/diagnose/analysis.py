"""What a diagnosis is made of, and the diagnosis of recorded traffic, sending nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from latdoc.advice.remedies import with_remedies
from latdoc.analysis.attribution import diagnose
from latdoc.analysis.traffic import recorded_prompt_tokens, traffic_views
from latdoc.model import Diagnosis, Scenario
from latdoc.pipeline import run_context
from latdoc.probe import dialects
from latdoc.records import Sample, Step
from latdoc.store import RunInfo


@dataclass(frozen=True)
class DiagnosisRun:
    """A diagnosis and what it was made from."""

    run_id: str
    diagnosis: Diagnosis
    samples: tuple[Sample, ...]
    status: str
    """``done``, or ``interrupted`` when the caller stopped the run (what was
    measured until then is diagnosed all the same)."""
    store_path: str
    source: Mapping[str, Any] | None = None
    """For a diagnosis of recorded traffic, what recorded it: ``kind`` (``instrument``
    or ``otlp``), ``recorded_by`` (``latdoc.instrument``, or the instrumentation that
    wrote the spans) and, for spans, the ``file`` they were read from."""

    @property
    def all_failed(self) -> bool:
        """Every measured request failed (calibration aside)."""
        measured = [s for s in self.samples if s.step is not Step.CALIBRATION]
        return bool(measured) and all(not s.trace.ok for s in measured)


def traffic_diagnosis(
    info: RunInfo, samples: Sequence[Sample], prompt_tokens: int | None
) -> tuple[Diagnosis, dict[str, Any]]:
    """The diagnosis of an ``instrument`` run's recorded requests, and what recorded them
    (:attr:`DiagnosisRun.source`).

    The notes say what natural traffic cannot tell: no cold and warm pairs on purpose, no
    controlled prompt lengths, no concurrency probe. The verdict is for a request of
    ``prompt_tokens`` prompt tokens where told, else of the recorded requests' median
    prompt (:func:`~latdoc.analysis.traffic.recorded_prompt_tokens`).
    """
    views = traffic_views(samples, dialects.names(), replayed=info.meta.get("source") == "replay")
    recorded = recorded_prompt_tokens(samples, dialects.names()) if prompt_tokens is None else None
    concurrency = max((s.concurrency for s in samples), default=1)
    meta = {
        **info.meta,
        "concurrency": info.meta.get("concurrency", concurrency),
        "prompt_tokens": prompt_tokens if prompt_tokens is not None else recorded,
    }
    context = run_context(
        info.run_id,
        info.endpoint,
        info.model,
        Scenario(info.scenario),
        meta,
        (*info.notes, *views.notes),
    )
    if recorded is not None:
        context = replace(context, prompt_source="recorded")
    diagnosis = with_remedies(diagnose(samples, context, views), context)
    kind = str(info.meta.get("source", "instrument"))
    source: dict[str, Any] = {
        "kind": kind,
        "recorded_by": str(info.meta.get("instrumentation") or "")
        or ("latdoc.instrument" if kind == "instrument" else "an unnamed instrumentation"),
    }
    if "file" in info.meta:
        source["file"] = str(info.meta["file"])
    return diagnosis, source
