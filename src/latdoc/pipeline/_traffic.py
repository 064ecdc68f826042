"""Diagnose recorded traffic, sending nothing: an ``instrument`` run, or OTLP spans."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from latdoc.advice.remedies import with_remedies
from latdoc.analysis.attribution import diagnose
from latdoc.analysis.traffic import recorded_prompt_tokens, traffic_views
from latdoc.errors import UsageError
from latdoc.model import Scenario
from latdoc.pipeline._diagnose import DiagnosisRun, run_context
from latdoc.probe import dialects
from latdoc.records import Sample, Step
from latdoc.store import Store
from latdoc.workload.otlp import decode, read_otlp


def diagnose_traffic(
    store: Store, run_id: str, *, prompt_tokens: int | None = None
) -> DiagnosisRun:
    """Diagnose an ``instrument`` run (an id or a unique prefix) from its recorded requests.

    The notes say what natural traffic cannot tell: no cold and warm pairs on
    purpose, no controlled prompt lengths, no concurrency probe. The verdict is for a
    request of ``prompt_tokens`` prompt tokens where the user tells it (kept with the
    run, so ``latdoc report`` gives the same verdict), else of the prompt told before,
    else of the recorded requests' median prompt (:func:`recorded_prompt_tokens`).
    """
    info, samples, _ = store.load_run(run_id)
    if info.kind != "instrument":
        raise UsageError(
            f"run {info.run_id} is a {info.kind} run, not recorded traffic: "
            f"`latdoc report {info.run_id}` shows it"
        )
    if not any(s.step is Step.TRAFFIC for s in samples):
        raise UsageError(f"run {info.run_id} holds no recorded requests yet")
    views = traffic_views(samples, dialects.names(), replayed=info.meta.get("source") == "replay")
    if prompt_tokens is not None and info.meta.get("prompt_tokens") != prompt_tokens:
        store.update_meta(info.run_id, {"prompt_tokens": prompt_tokens})
    told = prompt_tokens if prompt_tokens is not None else info.meta.get("prompt_tokens")
    recorded = recorded_prompt_tokens(samples, dialects.names()) if told is None else None
    concurrency = max((s.concurrency for s in samples), default=1)
    meta = {
        **info.meta,
        "concurrency": info.meta.get("concurrency", concurrency),
        "prompt_tokens": told if told is not None else recorded,
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
    return DiagnosisRun(
        info.run_id, diagnosis, tuple(samples), info.status, store.path, source=source
    )


def diagnose_otlp(
    store: Store, path: Path | str, *, prompt_tokens: int | None = None
) -> DiagnosisRun:
    """Keep the GenAI spans of an OTLP JSON file as a run of recorded traffic, and
    diagnose it; the notes name the instrumentation that wrote the spans (kept in the
    run's meta as ``instrumentation`` too) and the phases spans cannot tell apart.
    ``prompt_tokens`` as for :func:`diagnose_traffic`: the spans' median where not told."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror}") from None
    spans = read_otlp(decode(data, str(file)), str(file))
    first = spans.traces[0]
    run_id = store.new_run(
        endpoint=first.url,
        model=first.model or "(spans)",
        scenario=Scenario.CHAT,
        meta={
            "source": "otlp",
            "file": file.name,
            "spans": len(spans.traces),
            "instrumentation": spans.instrumentation,
            "prompt_tokens": prompt_tokens,
        },
        kind="instrument",
    )
    store.add_samples(
        run_id, [Sample(Step.TRAFFIC, t, index=i) for i, t in enumerate(spans.traces)]
    )
    store.finish_run(run_id, status="done", diagnosis=None, notes=spans.notes)
    return diagnose_traffic(store, run_id, prompt_tokens=prompt_tokens)
