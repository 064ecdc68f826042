"""The user's typical request: the shares, the noticeable bar and the verdict are of one
request, of the user's prompt (``--prompt-tokens``) or the seed's 2K one, read from the
fitted length curve; a longer prompt that would change the verdict is said in one line.

The arithmetic is checked on the truth bank's synthetic samples (no sockets); the new
user's endpoint (prefill 155 ms at 128 tokens, 4.3× at 2K, 15× at 8K) runs once
against the lab over loopback and is diagnosed for two requests."""

from __future__ import annotations

import asyncio
import io
from dataclasses import replace

import pytest

from bank import Scenario, draw, generate
from bank.generate import context
from latdoc import DiagnosisPlan, Endpoint, Kind, RunContext, build_diagnosis, measure_steps
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.records import Sample
from latdoc.report import make_console, render_diagnosis, render_html


def _grown_samples() -> tuple[list[Sample], Scenario]:
    """A healthy endpoint but for a prefill of 0.5 ms a token."""
    s = replace(draw(11, causes=(), noise="low"), prefill_b_ms=0.5, prefill_a_ms=60.0)
    return generate(s), s


def test_the_bar_and_input_lengths_share_are_of_one_request_at_the_users_prompt() -> None:
    samples, s = _grown_samples()
    base = build_diagnosis(samples, context(s))
    for tokens in (2048, 5000, 8192):
        d = build_diagnosis(samples, replace(context(s), prompt_tokens=tokens))
        check, curve, w, bar = d.length_check, d.length, d.workload, d.noticeable
        assert check is not None and curve is not None and w is not None and bar is not None
        short = curve.points[0].prompt_tokens
        assert check.long_tokens == tokens and w.prompt_tokens == tokens and w.told
        growth = curve.predict_ms(tokens) - curve.predict_ms(short)
        assert check.growth_ms == pytest.approx(growth)
        assert w.growth_ms == pytest.approx(growth)
        assert w.total_ms == pytest.approx(bar.typical_ms)
        assert w.total_ms == pytest.approx(w.short_ms + growth)
        assert base.workload is not None and w.short_ms == pytest.approx(base.workload.short_ms)
        if Kind.INPUT_LENGTH in d.shares_ms:
            assert d.shares_ms[Kind.INPUT_LENGTH] == pytest.approx(growth, abs=1e-3)
        assert d.longer_prompt is None


def test_a_prompt_beyond_the_longest_length_is_read_there_and_said_so() -> None:
    samples, s = _grown_samples()
    d = build_diagnosis(samples, replace(context(s), prompt_tokens=100_000))
    check, curve, w = d.length_check, d.length, d.workload
    assert check is not None and curve is not None and w is not None
    longest = curve.points[-1].prompt_tokens
    assert check.long_tokens == w.prompt_tokens == longest
    assert check.asked_tokens == w.asked_tokens == 100_000
    assert "not extrapolated" in check.why
    short = build_diagnosis(samples, replace(context(s), prompt_tokens=64))
    assert short.workload is not None and short.workload.growth_ms == 0.0
    assert short.workload.prompt_tokens == 64 and Kind.INPUT_LENGTH not in short.shares_ms


NEW_USER = LatencyModel(prefill_base_ms=120.0, prefill_ms_per_token=0.27, decode_ms_per_token=4.0)
"""Prefill 155 ms at 128 tokens, 0.67 s at 2K (4.3×, +0.5 s: under the seed's
thresholds), 2.3 s at 8K (15×) and 9.0 s at 32K."""


def test_the_new_users_endpoint_is_healthy_at_2k_with_a_line_and_input_length_at_8k() -> None:
    config = LabConfig(latency=NEW_USER)
    with LabProcess(config) as lab:
        plan = DiagnosisPlan(Endpoint(lab.base_url, config.model), max_tokens=16, seed=5)
        result = asyncio.run(measure_steps(plan))
    run = RunContext("new-user", lab.base_url, config.model, notes=tuple(result.notes))
    seed = build_diagnosis(result.samples, run)
    assert seed.verdict.primary is Kind.HEALTHY, seed.findings
    assert seed.length_check is not None and not seed.length_check.fired
    longer = seed.longer_prompt
    assert longer is not None and longer.prompt_tokens >= 8000, seed.length_check
    assert longer.growth_interval_ms[0] <= longer.growth_ms <= longer.growth_interval_ms[1]
    out = io.StringIO()
    make_console(out, width=200).print(render_diagnosis(seed))
    text = out.getvalue()
    assert f"ask with --prompt-tokens {longer.prompt_tokens}" in text
    assert "Shares are of a typical request of 2,048 prompt tokens" in text
    page = render_html(seed, result.samples)
    assert f"--prompt-tokens {longer.prompt_tokens}" in page

    theirs = build_diagnosis(result.samples, replace(run, prompt_tokens=8000))
    assert theirs.verdict.primary is Kind.INPUT_LENGTH, theirs.findings
    assert theirs.longer_prompt is None
    w, bar = theirs.workload, theirs.noticeable
    assert w is not None and bar is not None and w.prompt_tokens == 8000
    assert w.total_ms == pytest.approx(bar.typical_ms)
    assert theirs.shares_ms[Kind.INPUT_LENGTH] == pytest.approx(w.growth_ms, abs=1e-3)
