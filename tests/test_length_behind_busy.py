"""The new user's endpoint from issue 17: prefill grows ~10× from 128 to 2K tokens while
30% of requests meet a busy server (~1 s more). The length rule read the fastest of
about two requests per length, and one busy short request sank it: the verdict was
decode + queueing, input length not even contributing, and no remedy carried a
fitted gain, although the fitted curve itself read the growth. And a new user's
endpoint on the wire, whose prefill grows 129× to 32K tokens behind such a server."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from bank import Scenario, draw, generate, truth
from bank.generate import context
from latdoc import (
    Diagnosis,
    DiagnosisPlan,
    Endpoint,
    Kind,
    RunContext,
    build_diagnosis,
    measure_steps,
)
from latdoc.lab.sim import LabProcess
from length_trend import lab_config


def _endpoint(seed: int) -> Scenario:
    base = draw(seed, causes=(), noise="mid")
    short = base.rtt_ms + 200.0
    # Prefill at 2K tokens ten times the short TTFT, linear in the prompt.
    b = (10 * short - short) / (2048 - 128)
    return replace(
        base,
        prefill_a_ms=200.0 - 128 * b,
        prefill_b_ms=b,
        busy_share=0.3,
        busy_ms=1000.0,
        tpot_ms=60.0,
    )


def test_input_length_is_named_behind_a_busy_server_with_a_fitted_gain() -> None:
    named = fitted = 0
    seeds = range(4000, 4012)
    for seed in seeds:
        s = _endpoint(seed)
        assert Kind.INPUT_LENGTH in truth(s).named
        d = build_diagnosis(generate(s), context(s))
        if Kind.INPUT_LENGTH in (d.verdict.primary, *d.verdict.contributing):
            named += 1
        if any(r.gain_source == "fitted" and r.predicted_gain_ms for r in d.remedies):
            fitted += 1
    assert (named, fitted) == (len(seeds), len(seeds))


def _lab_run(seed: int) -> Diagnosis:
    config = lab_config(seed)
    with LabProcess(config) as lab:
        plan = DiagnosisPlan(Endpoint(lab.base_url, config.model), max_tokens=8, seed=seed)
        result = asyncio.run(measure_steps(plan))
    context = RunContext(f"seed-{seed}", lab.base_url, config.model, notes=tuple(result.notes))
    return build_diagnosis(result.samples, context)


def test_a_prefill_growing_129_times_behind_a_busy_server_is_named_on_the_wire() -> None:
    """The new user's endpoint of ``bench/length_trend.py`` in the lab over loopback
    (prefill 0.35 ms a token, a busy server through 30% of the time): two seeded runs
    at once; the bench names input length in 9 runs of 10, so both failing here is a
    1-in-100 draw. The t test of two lengths it replaced named it in about half."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(_lab_run, (3, 6)))
    named = [d for d in runs if Kind.INPUT_LENGTH in (d.verdict.primary, *d.verdict.contributing)]
    assert named, [d.length_check for d in runs]
    for d in named:
        assert d.length_check is not None and "trend p" in d.length_check.why
        assert d.length is not None and len(d.length.points) >= 4
