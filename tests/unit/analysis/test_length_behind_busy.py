"""The new user's endpoint from issue 17: prefill grows ~10× from 128 to 2K tokens while
30% of requests meet a busy server (~1 s more). The length rule read the fastest of
about two requests per length, and one busy short request sank it: the verdict was
decode + queueing, input length not even contributing, and no remedy carried a
fitted gain, although the fitted curve itself read the growth. And a new user's
endpoint on the wire, whose prefill grows 129× to 32K tokens behind such a server."""

from __future__ import annotations

from dataclasses import replace

from bank import Scenario, draw, generate, truth
from bank.generate import context
from latdoc import (
    Kind,
    build_diagnosis,
)


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
