"""Measure, keep and diagnose an endpoint; diagnose a stored run again; diagnose recorded
traffic (an ``instrument`` run, or the spans of an OTLP file), sending nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from latdoc.analysis.run_reference import measured_reference
from latdoc.errors import UsageError
from latdoc.features.diagnose.analysis import DiagnosisRun, traffic_diagnosis
from latdoc.i18n import N_, Message
from latdoc.model import Priorities, Scenario
from latdoc.pipeline import (
    AUTO,
    MetricsReading,
    build_diagnosis,
    measure_steps,
    metrics_target,
    run_context,
    run_meta,
    watch_note,
)
from latdoc.records import Sample, Step, StepNote
from latdoc.reference import ReferenceProfile, reference_to_record
from latdoc.store import (
    DIAGNOSE_KIND,
    INSTRUMENT_KIND,
    LOAD_KIND,
    Store,
    diagnosis_to_record,
)
from latdoc.workload import DiagnosisPlan, ProgressHook, SampleHook
from latdoc.workload.otlp import OtlpTraffic, read_otlp_file


def diagnose_endpoint(
    plan: DiagnosisPlan,
    *,
    scenario: Scenario = Scenario.CHAT,
    concurrency: int | None = None,
    store: Store | None = None,
    on_sample: SampleHook | None = None,
    on_progress: ProgressHook | None = None,
    server_metrics: str | None = AUTO,
    prompt_tokens: int | None = None,
    priorities: Priorities | None = None,
    reference: ReferenceProfile | None = None,
) -> DiagnosisRun:
    """Measure ``plan``'s endpoint, keep every sample, and diagnose it.

    ``store`` defaults to the user's store (the API key of the plan's endpoint is
    masked in it). Ctrl-C stops the measuring, not the diagnosis: the run is kept
    as ``interrupted`` and what was measured is diagnosed. ``server_metrics`` is the
    engine's Prometheus page to read before and after the run (``auto``: ``/metrics``
    on the endpoint's host; ``None`` or ``off``: none). ``concurrency`` is the plan's
    (the one the load step sends and the pool is sized for) unless given.
    ``prompt_tokens`` is the user's typical prompt, which the verdict is for (kept with
    the run, so ``latdoc report`` gives the same verdict); None for the seed's 2K one.
    ``priorities`` rank the remedies (kept with the run too); None for ``scenario``'s.
    ``reference`` is what healthy is (kept with the run too); None for the profile
    latdoc ships.
    """
    if concurrency is None:
        concurrency = plan.concurrency
    if store is None:
        secrets = [plan.endpoint.api_key] if plan.endpoint.api_key else []
        with Store(None, secrets=secrets) as own:
            return diagnose_endpoint(
                plan,
                scenario=scenario,
                concurrency=concurrency,
                store=own,
                on_sample=on_sample,
                on_progress=on_progress,
                server_metrics=server_metrics,
                prompt_tokens=prompt_tokens,
                priorities=priorities,
                reference=reference,
            )
    target = metrics_target(server_metrics, plan.endpoint.base_url)
    meta = run_meta(plan, concurrency, prompt_tokens, priorities, reference)
    run_id = store.new_run(
        endpoint=plan.endpoint.base_url,
        model=plan.endpoint.model,
        scenario=scenario,
        meta=meta,
        kind=DIAGNOSE_KIND,
    )
    samples: list[Sample] = []

    def keep(sample: Sample) -> None:
        samples.append(sample)
        store.add_sample(run_id, sample)
        if on_sample is not None:
            on_sample(sample)

    reading = None if target is None else MetricsReading(target, plan.connection)
    status, notes = _measure(plan, keep, on_progress)
    if reading is not None:
        record = reading.finish()
        if record is not None:
            meta["server_metrics"] = record
            store.update_meta(run_id, {"server_metrics": record})
        if reading.note is not None:
            notes = [*notes, StepNote(Step.RUN, reading.note)]
    watched = watch_note(store, plan.endpoint.base_url, plan.endpoint.model)
    if watched is not None:
        notes = [*notes, watched]
    context = run_context(
        run_id, plan.endpoint.base_url, plan.endpoint.model, scenario, meta, notes
    )
    diagnosis = build_diagnosis(samples, context)
    store.finish_run(run_id, status=status, notes=notes, diagnosis=diagnosis_to_record(diagnosis))
    return DiagnosisRun(run_id, diagnosis, tuple(samples), status, store.path)


def _measure(
    plan: DiagnosisPlan, keep: SampleHook, on_progress: ProgressHook | None
) -> tuple[str, list[StepNote]]:
    """Send the plan's steps; how the run ended and its notes (Ctrl-C ends the measuring,
    not the run: what was measured is diagnosed)."""
    try:
        result = asyncio.run(measure_steps(plan, on_sample=keep, on_progress=on_progress))
    except KeyboardInterrupt:
        return "interrupted", [
            StepNote(Step.RUN, N_("interrupted by the user; diagnosed what was measured"))
        ]
    return "done", list(result.notes)


def rediagnose(store: Store, run_id: str) -> DiagnosisRun:
    """Diagnose a stored run (an id or a unique prefix of one) again, sending nothing."""
    info, samples, _ = store.load_run(run_id)
    if info.kind == INSTRUMENT_KIND:
        return diagnose_traffic(store, info.run_id)
    if info.kind != DIAGNOSE_KIND:
        said = Message(_NOT_A_DIAGNOSIS.get(info.kind, _ANOTHER_RUN), kind=info.kind)
        raise UsageError(Message("run {run_id} is {said}", run_id=info.run_id, said=said))
    context = run_context(
        info.run_id, info.endpoint, info.model, Scenario(info.scenario), info.meta, info.notes
    )
    diagnosis = build_diagnosis(samples, context)
    return DiagnosisRun(info.run_id, diagnosis, tuple(samples), info.status, store.path)


_NOT_A_DIAGNOSIS = {
    LOAD_KIND: N_("a load sweep, not a diagnosis: `latdoc report` renders it"),
}
"""What :func:`rediagnose` says of a stored run of another kind, by kind."""
_ANOTHER_RUN = N_("a {kind} run, not a diagnosis: `latdoc compare` compares it with another run")


def diagnose_traffic(
    store: Store,
    run_id: str,
    *,
    prompt_tokens: int | None = None,
    priorities: Priorities | None = None,
    reference: ReferenceProfile | None = None,
) -> DiagnosisRun:
    """Diagnose an ``instrument`` run (an id or a unique prefix) from its recorded requests.

    The notes say what natural traffic cannot tell: no cold and warm pairs on
    purpose, no controlled prompt lengths, no concurrency probe. The verdict is for a
    request of ``prompt_tokens`` prompt tokens where the user tells it (kept with the
    run, so ``latdoc report`` gives the same verdict), else of the prompt told before,
    else of the recorded requests' median prompt. The remedies are ranked for
    ``priorities`` where told (kept with the run alike), else for those told before,
    else for the run's scenario. ``reference`` is what healthy is, where told (kept
    with the run alike), else the one told before, else the profile latdoc ships.
    """
    info, samples, _ = store.load_run(run_id)
    if info.kind != INSTRUMENT_KIND:
        raise UsageError(
            Message(
                "run {run_id} is a {kind} run, not recorded traffic: `latdoc report {run_id}` "
                "shows it",
                run_id=info.run_id,
                kind=info.kind,
            )
        )
    if not any(s.step is Step.TRAFFIC for s in samples):
        raise UsageError(Message("run {run_id} holds no recorded requests yet", run_id=info.run_id))
    if prompt_tokens is not None and info.meta.get("prompt_tokens") != prompt_tokens:
        store.update_meta(info.run_id, {"prompt_tokens": prompt_tokens})
    if priorities is not None and info.meta.get("priorities") != priorities.spec():
        store.update_meta(info.run_id, {"priorities": priorities.spec()})
        info = replace(info, meta={**info.meta, "priorities": priorities.spec()})
    if reference is not None:
        kept = reference_to_record(reference)
        store.update_meta(info.run_id, {"reference": kept})
        info = replace(info, meta={**info.meta, "reference": kept})
    told = prompt_tokens if prompt_tokens is not None else info.meta.get("prompt_tokens")
    diagnosis, source = traffic_diagnosis(info, samples, told)
    return DiagnosisRun(
        info.run_id, diagnosis, tuple(samples), info.status, store.path, source=source
    )


def diagnose_otlp(
    store: Store,
    path: Path | str,
    *,
    prompt_tokens: int | None = None,
    priorities: Priorities | None = None,
    reference: ReferenceProfile | None = None,
) -> DiagnosisRun:
    """Keep the GenAI spans of an OTLP JSON file as a run of recorded traffic, and
    diagnose it (:func:`diagnose_spans`)."""
    return diagnose_spans(
        store,
        read_otlp_file(path),
        Path(path).name,
        prompt_tokens=prompt_tokens,
        priorities=priorities,
        reference=reference,
    )


def diagnose_spans(
    store: Store,
    spans: OtlpTraffic,
    file_name: str,
    *,
    prompt_tokens: int | None = None,
    priorities: Priorities | None = None,
    reference: ReferenceProfile | None = None,
    meta: Mapping[str, Any] | None = None,
) -> DiagnosisRun:
    """Keep the model calls an OTLP file held (read as :func:`read_otlp_file` reads it) as
    a run of recorded traffic, and diagnose it; the notes name the instrumentation that
    wrote the spans (kept in the run's meta as ``instrumentation`` too) and the phases
    spans cannot tell apart. ``prompt_tokens``, ``priorities`` and ``reference`` as for
    :func:`diagnose_traffic`: the spans' median prompt where not told; ``meta`` is more
    the run keeps (an agent's span tree)."""
    first = spans.traces[0]
    run_id = store.new_run(
        endpoint=first.url,
        model=first.model or "(spans)",
        scenario=Scenario.CHAT,
        meta={
            "source": "otlp",
            "file": file_name,
            "spans": len(spans.traces),
            "instrumentation": spans.instrumentation,
            "prompt_tokens": prompt_tokens,
            **(meta or {}),
        },
        kind=INSTRUMENT_KIND,
    )
    store.add_samples(
        run_id, [Sample(Step.TRAFFIC, t, index=i) for i, t in enumerate(spans.traces)]
    )
    store.finish_run(run_id, status="done", diagnosis=None, notes=spans.notes)
    return diagnose_traffic(
        store, run_id, prompt_tokens=prompt_tokens, priorities=priorities, reference=reference
    )


def reference_of_run(store: Store, run_id: str) -> ReferenceProfile:
    """What run ``run_id`` measured, as the reference a run is held against
    (``diagnose --reference-run``): its DNS, round trip, handshake, time per token,
    prefill growth, swing and client delay, over the profile latdoc ships
    (:func:`~latdoc.analysis.run_reference.measured_reference`)."""
    info, samples, _ = store.load_run(run_id)
    return measured_reference(samples, run_id=info.run_id, date=info.started_at.date().isoformat())
