"""A series of probes sent, each request a sample as it finishes: what a probe run
(:mod:`latdoc.features.probe`) and the probes sent from a vantage point share."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from latdoc.records import RequestTrace, Sample, Step
from latdoc.workload import ProbePlan, ProbeRun, run_probe


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
