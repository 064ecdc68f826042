"""Probes kept as a run, and any two stored runs compared."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from latdoc.analysis.compare import Comparison, compare_samples
from latdoc.analysis.gates import Gate, GateReport, check_gates
from latdoc.errors import UsageError
from latdoc.pipeline._host import host_meta
from latdoc.records import RequestTrace, Sample, Step
from latdoc.store import RunInfo, Store
from latdoc.workload import ProbePlan, ProbeRun, run_probe


@dataclass(frozen=True)
class StoredProbe:
    """A series of probes and the run that keeps it."""

    run_id: str
    result: ProbeRun
    store_path: str


def probe_endpoint(
    plan: ProbePlan,
    *,
    store: Store,
    on_trace: Callable[[int, RequestTrace], None] | None = None,
) -> StoredProbe:
    """Send ``plan``'s probes and keep every trace in ``store`` as it finishes.

    The run can be compared with another (:func:`compare_runs`); Ctrl-C keeps the
    traces that finished and marks the run ``interrupted`` before it propagates.
    """
    meta = {**host_meta(), "options": probe_options(plan)}
    run_id = store.new_run(
        endpoint=plan.endpoint.base_url,
        model=plan.endpoint.model,
        scenario="",
        meta=meta,
        kind="probe",
    )
    try:
        result = send_probes(plan, lambda s: store.add_sample(run_id, s), on_trace)
    except BaseException:
        store.finish_run(run_id, status="interrupted", diagnosis=None)
        raise
    store.finish_run(run_id, status="done", diagnosis=None)
    return StoredProbe(run_id, result, store.path)


@dataclass(frozen=True)
class RunComparison:
    """Two stored runs and their comparison, A first."""

    a: RunInfo
    b: RunInfo
    comparison: Comparison
    gates: GateReport | None = None
    """The ``--fail-if`` gates, B against A as its baseline, when any were given."""


def compare_runs(
    store: Store,
    run_a: str,
    run_b: str,
    *,
    allow_different: bool = False,
    seed: int = 0,
    gates: Sequence[Gate] = (),
) -> RunComparison:
    """Compare two stored runs (ids or unique prefixes) like with like, sending nothing;
    check ``gates`` with A as the baseline.

    Runs of different endpoints or models are refused unless ``allow_different``.
    """
    info_a, samples_a, _ = store.load_run(run_a)
    info_b, samples_b, _ = store.load_run(run_b)
    if info_a.run_id == info_b.run_id:
        raise UsageError(f"both runs are {info_a.run_id}: compare two different runs")
    if not allow_different:
        for what, x, y in (
            ("endpoint", info_a.endpoint, info_b.endpoint),
            ("model", info_a.model, info_b.model),
        ):
            if x != y:
                raise UsageError(
                    f"the runs measured different {what}s ({x} and {y}); "
                    "pass --allow-different to compare them anyway"
                )
    comparison = compare_samples(samples_a, samples_b, seed=seed)
    if not comparison.groups:
        raise UsageError(
            f"runs {info_a.run_id} and {info_b.run_id} have no requests sent under the same "
            "conditions (step, prompt length, concurrency) that both measured"
        )
    report = check_gates(samples_a, samples_b, gates) if gates else None
    return RunComparison(info_a, info_b, comparison, report)


def send_probes(
    plan: ProbePlan,
    keep: Callable[[Sample], None],
    on_trace: Callable[[int, RequestTrace], None] | None = None,
) -> ProbeRun:
    """Send ``plan``'s probes; every request, the calibration's and each attempt's too,
    reaches ``keep`` as a sample as it finishes, numbered in that order."""
    index = 0

    def sample(step: Step, trace: RequestTrace) -> None:
        nonlocal index
        cold = bool(trace.new_connection)
        keep(Sample(step, trace, target_prompt_tokens=plan.prompt_tokens, cold=cold, index=index))
        index += 1

    def on_probe(i: int, trace: RequestTrace) -> None:
        sample(Step.PROBE, trace)
        if on_trace is not None:
            on_trace(i, trace)

    return asyncio.run(
        run_probe(
            plan,
            on_probe,
            on_calibration=lambda t: sample(Step.CALIBRATION, t),
            on_attempt=lambda t: sample(Step.PROBE, t),
        )
    )


def probe_options(plan: ProbePlan) -> dict[str, Any]:
    """The options of a probe run, as its ``meta["options"]`` records them."""
    return {
        "prompt_tokens": plan.prompt_tokens,
        "max_tokens": plan.max_tokens,
        "repeat": plan.repeat,
        "reuse_connections": plan.reuse_connections,
        "http2": plan.connection.http2,
    }
