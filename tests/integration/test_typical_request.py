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

from latdoc import DiagnosisPlan, Endpoint, Kind, RunContext, build_diagnosis, measure_steps
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.report import make_console, render_diagnosis, render_html

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
