"""Measure, keep and diagnose an endpoint; diagnose a stored run again."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from latdoc.advice.remedies import with_remedies
from latdoc.advice.system import with_system
from latdoc.analysis.attribution import diagnose
from latdoc.errors import UsageError
from latdoc.model import Diagnosis, RunContext, Scenario
from latdoc.pipeline._clock import watch_note
from latdoc.pipeline._host import host_facts_from_meta, host_meta
from latdoc.pipeline._server_metrics import AUTO, MetricsReading, metrics_from_meta, metrics_target
from latdoc.records import Sample, Step, StepNote
from latdoc.store import Store, diagnosis_to_record
from latdoc.workload import (
    Budget,
    DiagnosisPlan,
    ProgressHook,
    SampleHook,
    StepsResult,
    run_steps,
)


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


def build_diagnosis(samples: Sequence[Sample], context: RunContext) -> Diagnosis:
    """Verdict, findings, ranked remedies, and the failing host settings that matter for
    the verdict, for one run's samples."""
    return with_system(with_remedies(diagnose(samples, context), context), context)


async def measure_steps(
    plan: DiagnosisPlan,
    *,
    budget: Budget | None = None,
    on_sample: SampleHook | None = None,
    on_progress: ProgressHook | None = None,
) -> StepsResult:
    """Measure the network, input-length and load steps within the plan's budget; it keeps
    and diagnoses nothing (:func:`diagnose_endpoint` does)."""
    return await run_steps(plan, budget, on_sample, on_progress)


async def run_diagnosis(
    plan: DiagnosisPlan,
    *,
    budget: Budget | None = None,
    on_sample: SampleHook | None = None,
    on_progress: ProgressHook | None = None,
) -> StepsResult:
    """Deprecated name of :func:`measure_steps`, which it calls: it only measures."""
    warnings.warn(
        "run_diagnosis only measures and is now measure_steps; the old name goes in the "
        "next release",
        DeprecationWarning,
        stacklevel=2,
    )
    return await measure_steps(plan, budget=budget, on_sample=on_sample, on_progress=on_progress)


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
            )
    target = metrics_target(server_metrics, plan.endpoint.base_url)
    meta = run_meta(plan, concurrency, prompt_tokens)
    run_id = store.new_run(
        endpoint=plan.endpoint.base_url, model=plan.endpoint.model, scenario=scenario, meta=meta
    )
    samples: list[Sample] = []

    def keep(sample: Sample) -> None:
        samples.append(sample)
        store.add_sample(run_id, sample)
        if on_sample is not None:
            on_sample(sample)

    reading = None if target is None else MetricsReading(target, plan.connection)
    status, notes = "done", []
    try:
        result = asyncio.run(measure_steps(plan, on_sample=keep, on_progress=on_progress))
        notes = result.notes
    except KeyboardInterrupt:
        status = "interrupted"
        notes = [StepNote(Step.RUN, "interrupted by the user; diagnosed what was measured")]
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


def rediagnose(store: Store, run_id: str) -> DiagnosisRun:
    """Diagnose a stored run (an id or a unique prefix of one) again, sending nothing."""
    info, samples, _ = store.load_run(run_id)
    if info.kind == "instrument":
        from latdoc.pipeline._traffic import diagnose_traffic

        return diagnose_traffic(store, info.run_id)
    if info.kind == "load":
        raise UsageError(
            f"run {info.run_id} is a load sweep, not a diagnosis: `latdoc report` renders it"
        )
    if info.kind != "diagnose":
        raise UsageError(
            f"run {info.run_id} is a {info.kind} run, not a diagnosis: "
            "`latdoc compare` compares it with another run"
        )
    context = run_context(
        info.run_id, info.endpoint, info.model, Scenario(info.scenario), info.meta, info.notes
    )
    diagnosis = build_diagnosis(samples, context)
    return DiagnosisRun(info.run_id, diagnosis, tuple(samples), info.status, store.path)


def run_context(
    run_id: str,
    endpoint: str,
    model: str,
    scenario: Scenario,
    meta: Mapping[str, Any],
    notes: Sequence[StepNote],
) -> RunContext:
    """What the analysis needs to know beyond the samples, from a run's metadata."""
    metrics, metrics_source = metrics_from_meta(meta)
    return RunContext(
        run_id=run_id,
        endpoint=endpoint,
        model=model,
        scenario=scenario,
        concurrency=int(meta.get("concurrency", 1)),
        prompt_tokens=None if meta.get("prompt_tokens") is None else int(meta["prompt_tokens"]),
        cpu_count=int(meta.get("cpu_count", 1)),
        tcp_settings={str(k): int(v) for k, v in dict(meta.get("tcp_settings", {})).items()},
        notes=tuple(notes),
        host=host_facts_from_meta(meta),
        server_metrics=metrics,
        server_metrics_source=metrics_source,
    )


def run_meta(
    plan: DiagnosisPlan, concurrency: int, prompt_tokens: int | None = None
) -> dict[str, Any]:
    """What a run records about itself: versions, the client host, the options, and the
    user's typical request (its concurrency and prompt tokens) the verdict is for."""
    return {
        **host_meta(),
        "concurrency": concurrency,
        "prompt_tokens": prompt_tokens,
        "options": {
            "max_requests": plan.max_requests,
            "token_budget": plan.token_budget,
            "max_seconds": plan.max_seconds,
            "max_tokens": plan.max_tokens,
            "context_window": plan.context_window,
            "http2": plan.connection.http2,
        },
    }
