"""``latdoc compare``: like with like, intervals that cover the truth, significance when real."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from latdoc import (
    ErrorKind,
    Phase,
    RequestTrace,
    Sample,
    Step,
    TraceError,
    comparison_to_dict,
    render_comparison,
    render_text,
)
from latdoc.analysis.compare import TRIAL_MEAN, compare_arms, compare_samples, trial_means

NS = 1_000_000


def trace(ttft_ms: float, total_ms: float, *, new: bool = False) -> RequestTrace:
    return RequestTrace(
        started_at=datetime(2026, 11, 30, tzinfo=UTC),
        t0_ns=0,
        url="http://127.0.0.1:1/v1/chat/completions",
        model="m",
        dialect="chat",
        new_connection=new,
        queue_done_ns=100_000,
        sent_ns=200_000,
        first_byte_ns=int(ttft_ms * NS) - 1000,
        first_token_ns=int(ttft_ms * NS),
        done_ns=int(total_ms * NS),
        output_tokens=8,
        output_tokens_exact=True,
    )


def samples(median_ms: float, n: int, seed: int, *, step: Step = Step.PROBE) -> list[Sample]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ttft = median_ms * rng.lognormvariate(0, 0.1)
        out.append(Sample(step, trace(ttft, ttft + 70), index=i))
    return out


def test_a_real_speedup_is_significant_and_its_interval_covers_the_truth() -> None:
    result = compare_samples(samples(200, 30, 1), samples(100, 30, 2))
    ttft = result.headline("ttft")
    assert ttft is not None
    assert ttft.significant and ttft.faster == "B"
    assert ttft.ratio_ci is not None and ttft.ratio_ci[0] < 2.0 < ttft.ratio_ci[1]
    assert ttft.difference_ci_ms is not None and ttft.difference_ci_ms[1] < 0
    (group,) = comparison_to_dict(result, a={}, b={})["groups"]
    (line,) = [m["summary"] for m in group["metrics"] if m["metric"] == "ttft"]
    assert line.startswith("B: TTFT ") and "× faster than A (p < 0.001, n = 30/30)" in line


TIMEOUT = TraceError(ErrorKind.TIMEOUT, Phase.WAIT, "timed out")


def ttft(t: RequestTrace) -> float | None:
    return t.ttft_ms


def waves(base_ms: float, wave_ms: float, trials: int, seed: int, *, pool: int) -> list[Sample]:
    """Trials of 8 requests sent at once through ``pool`` connections: waves of ``pool``."""
    rng = random.Random(seed)
    out = []
    for t in range(trials):
        for k in range(8):
            ttft = (base_ms + wave_ms * (k // pool)) * rng.lognormvariate(0, 0.02)
            out.append(
                Sample(Step.EXPERIMENT, trace(ttft, ttft + 70), concurrency=8, index=t * 8 + k)
            )
    return out


def test_a_trial_mean_counts_every_wave_once_and_a_stalled_trial_moves_it_not() -> None:
    a, b = waves(20, 100, 9, 1, pool=2), waves(20, 0, 9, 2, pool=8)
    # One trial of A held up 2 s before it was sent; two of B's requests failed.
    stalled = [
        replace(s, trace=replace(s.trace, first_token_ns=s.trace.first_token_ns + 2000 * NS))
        if 16 <= s.index < 24
        else s
        for s in a
    ]
    failed = [
        replace(s, trace=replace(s.trace, error=TIMEOUT)) if s.index in (3, 40) else s for s in b
    ]
    assert len(trial_means(failed, ttft)) == 9
    assert trial_means(stalled, ttft)[2] == pytest.approx(2020 + 150, rel=0.05)
    headline = compare_arms("ttft", "TTFT", stalled, failed, ttft, statistic=TRIAL_MEAN)
    assert headline is not None and (headline.n_a, headline.n_b) == (9, 9)
    # The waves of 2 of 8 requests add 0, 0, 1, 1, 2, 2, 3, 3 waves of 100 ms: 150 on average.
    assert -headline.difference_ms == pytest.approx(150, rel=0.05)
    mean_of_all = compare_arms("ttft", "TTFT", stalled, failed, ttft)
    assert mean_of_all is not None and mean_of_all.n_a == 72 and mean_of_all.n_b == 70
    low, high = headline.difference_ci_ms or (0.0, 0.0)
    assert low < -140 and high > -160


def test_the_same_distribution_is_no_significant_difference() -> None:
    significant = 0
    for seed in range(20):
        result = compare_samples(samples(100, 20, seed), samples(100, 20, seed + 100))
        significant += any(m.significant for g in result.groups for m in g.metrics)
    assert significant <= 2, f"{significant} of 20 same-distribution comparisons were significant"


def test_only_like_is_compared_with_like() -> None:
    a = samples(100, 6, 1, step=Step.LOAD) + [
        replace(s, target_prompt_tokens=2048) for s in samples(900, 4, 2, step=Step.LENGTH)
    ]
    b = samples(100, 6, 3, step=Step.LOAD)
    result = compare_samples(a, b)
    assert [g.key.step for g in result.groups] == ["load"]
    assert [k.label() for k in result.only_a] == ["length, 2048 prompt tokens"]
    assert result.only_b == ()


def test_holm_adjusted_p_values_are_never_below_the_raw_ones() -> None:
    result = compare_samples(samples(200, 12, 1), samples(190, 12, 2))
    for group in result.groups:
        for m in group.metrics:
            assert m.p_value is not None and m.p_adjusted is not None
            assert m.p_adjusted >= m.p_value


def test_the_terminal_view_fits_80_columns() -> None:
    result = compare_samples(samples(200, 30, 1), samples(100, 30, 2))
    text = render_text(render_comparison(result, a_label="before", b_label="after"), width=80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "B: TTFT" in text and "faster than A" in text
