"""The user's typical request: the shares, the noticeable bar and the verdict are of one
request, of the user's prompt (``--prompt-tokens``) or the seed's 2K one, read from the
fitted length curve; a longer prompt that would change the verdict is said in one line.

The arithmetic is checked on the truth bank's synthetic samples (no sockets); two
endpoints run against the lab over loopback. The new user's (prefill 155 ms at 128
tokens, 4.3× at 2K, 15× at 8K) costs 270 ms per 1K prompt tokens, 4.4× the reference
profile's slow edge of healthy (62): at the seed's 2K prompt that is input length,
though the seed's 5× rule does not fire. A milder one (90 ms per 1K, on a base of 500
ms) is healthy at 2K, with the one line saying what 8K would cost, and input length
when the user says their prompts are 8K."""

from __future__ import annotations

import asyncio
import io
from dataclasses import replace

import pytest

from latdoc import DiagnosisPlan, Endpoint, Kind, RunContext, build_diagnosis, measure_steps
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.report import make_console, render_diagnosis, render_html

NEW_USER = LatencyModel(prefill_base_ms=120.0, prefill_ms_per_token=0.27, decode_ms_per_token=4.0)
"""Prefill 155 ms at 128 tokens, 0.67 s at 2K (4.3×, +0.5 s: under the seed's
thresholds), 2.3 s at 8K (15×) and 9.0 s at 32K."""
MILD = LatencyModel(prefill_base_ms=500.0, prefill_ms_per_token=0.09, decode_ms_per_token=4.0)
"""28 ms per 1K past the slow edge: 54 ms at 2K on a request of ~0.75 s, 220 ms at 8K
on one of ~1.3 s."""


def _measured(latency: LatencyModel) -> tuple[list, RunContext]:  # type: ignore[type-arg]
    config = LabConfig(latency=latency)
    with LabProcess(config) as lab:
        plan = DiagnosisPlan(Endpoint(lab.base_url, config.model), max_tokens=16, seed=5)
        result = asyncio.run(measure_steps(plan))
    run = RunContext("typical", lab.base_url, config.model, notes=tuple(result.notes))
    return list(result.samples), run


def test_the_new_users_endpoint_is_input_length_at_2k_though_the_seed_rule_does_not_fire() -> None:
    samples, run = _measured(NEW_USER)
    d = build_diagnosis(samples, run)
    assert d.verdict.primary is Kind.INPUT_LENGTH, d.findings
    check = d.length_check
    assert check is not None and not check.fired, "the seed's 5× rule stays a line"
    (finding,) = [f for f in d.findings if f.kind is Kind.INPUT_LENGTH]
    assert finding.excess_ms == pytest.approx(check.growth_ms - 0.062 * 1920, rel=0.01)
    out = io.StringIO()
    make_console(out, width=200).print(render_diagnosis(d))
    text = " ".join(out.getvalue().split())
    assert "a prefill at the slow edge of healthy, 62 ms per 1K tokens" in text
    assert "seed rule: fitted TTFT at 2,048 tokens" in text and "did not fire" in text


def test_a_mild_endpoint_is_healthy_at_2k_with_a_line_and_input_length_at_8k() -> None:
    samples, run = _measured(MILD)
    seed = build_diagnosis(samples, run)
    assert seed.verdict.primary is Kind.HEALTHY, seed.findings
    assert seed.length_check is not None and not seed.length_check.fired
    longer = seed.longer_prompt
    assert longer is not None and longer.prompt_tokens >= 8000, seed.length_check
    assert longer.growth_interval_ms[0] <= longer.growth_ms <= longer.growth_interval_ms[1]
    out = io.StringIO()
    make_console(out, width=200).print(render_diagnosis(seed))
    text = " ".join(out.getvalue().split())
    assert f"ask with --prompt-tokens {longer.prompt_tokens}" in text
    assert "Shares are of a typical request of 2,048 prompt tokens" in text
    page = render_html(seed, samples)
    assert f"--prompt-tokens {longer.prompt_tokens}" in page

    theirs = build_diagnosis(samples, replace(run, prompt_tokens=8000))
    assert theirs.verdict.primary is Kind.INPUT_LENGTH, theirs.findings
    assert theirs.longer_prompt is None
    w, bar = theirs.workload, theirs.noticeable
    assert w is not None and bar is not None and w.prompt_tokens == 8000
    assert w.total_ms == pytest.approx(bar.typical_ms)
    assert theirs.shares_ms[Kind.INPUT_LENGTH] == pytest.approx(w.growth_ms, abs=1e-3)
