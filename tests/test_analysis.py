"""Pure analysis: the length-curve fit, stalls, dispersion, the budget."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from latdoc.analysis.diagnosis import LengthPoint
from latdoc.analysis.length import fit_length_curve, length_points
from latdoc.analysis.signals import dispersion, find_stalls, modified_z
from latdoc.analysis.stats import Distribution, quantile
from latdoc.errors import UsageError
from latdoc.workload import Budget


def _points(a: float, b: float, c: float, lengths: tuple[int, ...]) -> list[LengthPoint]:
    return [LengthPoint(n, a + b * n / 1000 + c * (n / 1000) ** 2, 2) for n in lengths]


def test_quadratic_prefill_is_recovered_and_called_super_linear() -> None:
    curve = fit_length_curve(_points(40.0, 150.0, 120.0, (128, 512, 2048, 8192)))
    assert curve is not None
    assert curve.a_ms == pytest.approx(40.0, abs=1e-6)
    assert curve.b_ms_per_1k == pytest.approx(150.0, rel=1e-6)
    assert curve.c_ms_per_1k2 == pytest.approx(120.0, rel=1e-6)
    assert curve.shape == "super-linear"
    assert curve.predict_ms(4096) == pytest.approx(40 + 150 * 4.096 + 120 * 4.096**2)
    assert curve.prefill_ms_per_1k == pytest.approx(150 + 2 * 120 * 8.192)


def test_linear_prefill_is_linear_and_a_flat_one_flat() -> None:
    linear = fit_length_curve(_points(50.0, 400.0, 0.0, (128, 512, 2048)))
    flat = fit_length_curve(_points(300.0, 10.0, 0.0, (128, 512, 2048)))
    assert linear is not None and linear.shape == "linear"
    assert linear.c_ms_per_1k2 == pytest.approx(0.0, abs=1e-6)
    assert flat is not None and flat.shape == "flat"


def test_negative_curvature_falls_back_to_a_line() -> None:
    pts = [LengthPoint(100, 100.0, 1), LengthPoint(1000, 900.0, 1), LengthPoint(2000, 1200.0, 1)]
    curve = fit_length_curve(pts)
    assert curve is not None
    assert curve.c_ms_per_1k2 == 0.0
    assert curve.b_ms_per_1k > 0


def test_a_single_length_gives_no_curve() -> None:
    assert fit_length_curve([LengthPoint(128, 50.0, 3)]) is None


def test_length_points_take_the_median_per_length() -> None:
    pts = length_points([(128, 10.0), (128, 30.0), (128, 20.0), (512, 40.0)])
    assert pts == (LengthPoint(128, 20.0, 3, 10.0), LengthPoint(512, 40.0, 1, 40.0))


def test_a_stall_is_found_where_it_is() -> None:
    itl = [10.0, 11.0, 9.5, 10.2, 10.1, 800.0, 10.0, 9.9, 10.3]
    stalls = find_stalls(itl)
    assert len(stalls) == 1
    assert stalls[0].after_token == 6
    assert stalls[0].gap_ms == 800.0


def test_jitter_is_not_a_stall() -> None:
    assert find_stalls([10.0, 14.0, 7.0, 30.0, 9.0, 12.0, 11.0]) == []
    assert find_stalls([1.0, 1.2, 0.9, 9.0, 1.1, 1.0]) == []


def test_modified_z_is_zero_at_the_median() -> None:
    assert modified_z([1.0, 2.0, 3.0], 2.0) == 0.0
    assert modified_z([1.0, 2.0, 3.0, 4.0, 100.0], 100.0) > 3.5


def test_dispersion_of_steady_and_swinging_samples() -> None:
    steady = dispersion([100.0, 101.0, 99.0, 100.5, 99.5])
    swinging = dispersion([100.0, 3000.0, 120.0, 2800.0, 90.0, 110.0])
    assert steady is not None and steady.cv < 0.05
    assert swinging is not None and swinging.cv > 0.5 and swinging.p95_over_p50 > 2


def test_distribution_and_quantiles() -> None:
    d = Distribution.of([3.0, 1.0, None, 2.0])
    assert d is not None
    assert (d.n, d.min, d.p50, d.max) == (3, 1.0, 2.0, 3.0)
    assert d.stdev == pytest.approx(1.0)
    single = Distribution.of([5.0])
    assert single is not None and single.stdev is None
    assert Distribution.of([None]) is None
    assert quantile([0.0, 10.0], 0.9) == pytest.approx(9.0)
    with pytest.raises(ValueError, match="empty"):
        quantile([], 0.5)


@given(
    max_requests=st.integers(1, 30),
    max_tokens=st.one_of(st.none(), st.integers(1, 5000)),
    asks=st.lists(st.tuples(st.integers(0, 2000), st.integers(1, 300)), max_size=60),
)
def test_budget_is_never_exceeded(
    max_requests: int, max_tokens: int | None, asks: list[tuple[int, int]]
) -> None:
    budget = Budget(max_requests, max_tokens)
    granted = [ask for ask in asks if budget.reserve(*ask)]
    assert len(granted) <= max_requests
    spent = sum(p + o for p, o in granted)
    assert budget.tokens == spent
    if max_tokens is not None:
        assert spent <= max_tokens
    # Whatever was refused really did not fit at that moment.
    assert budget.requests == len(granted)


def test_budget_clock_and_bad_caps() -> None:
    now = [0.0]
    budget = Budget(5, max_seconds=10.0, clock=lambda: now[0])
    now[0] = 4.0
    assert budget.seconds_left == pytest.approx(6.0)
    assert math.isinf(Budget(5).seconds_left)
    for kwargs in ({"max_requests": 0}, {"max_requests": 1, "token_budget": 0}):
        with pytest.raises(UsageError):
            Budget(**kwargs)  # type: ignore[arg-type]


def test_the_loop_lag_monitor_sees_a_blocked_loop() -> None:
    import asyncio
    import time

    from latdoc.probe import LoopLagMonitor, now_ns

    async def go() -> tuple[float | None, float | None]:
        async with LoopLagMonitor() as lag:
            await asyncio.sleep(0.05)
            calm_start = now_ns()
            await asyncio.sleep(0.1)
            calm = lag.max_between(calm_start, now_ns())
            start = now_ns()
            time.sleep(0.12)  # noqa: ASYNC251 -- blocking the loop is the point
            await asyncio.sleep(0.03)
            blocked = lag.max_between(start, now_ns())
        return calm, blocked

    calm, blocked = asyncio.run(go())
    assert calm is not None and calm < 60
    assert blocked is not None and blocked >= 100


def test_a_lagging_client_is_named_and_not_blamed_on_the_server() -> None:
    from datetime import UTC, datetime

    from latdoc.analysis.attribution import RunContext, diagnose
    from latdoc.analysis.diagnosis import Kind
    from latdoc.records import Chunk, RequestTrace, Sample

    def trace(ttft_ms: float) -> RequestTrace:
        ms = 1_000_000
        chunks = tuple(Chunk(int((ttft_ms + 10 * k) * ms), 5, 1) for k in range(8))
        return RequestTrace(
            started_at=datetime(2026, 11, 29, tzinfo=UTC), t0_ns=0, url="u", model="m",
            dialect="chat", new_connection=False, queue_done_ns=0, dns_done_ns=0,
            connect_done_ns=0, sent_ns=ms, first_byte_ns=2 * ms,
            first_token_ns=chunks[0].t_ns, done_ns=chunks[-1].t_ns, chunks=chunks,
            output_tokens=8, output_tokens_exact=True, chunk_tokens_exact=True,
        )  # fmt: skip

    samples = [Sample("load", trace(50 + 3 * i), 64, loop_lag_ms=80.0) for i in range(6)]
    d = diagnose(samples, RunContext("r", "u", "m"))
    assert d.verdict.primary is Kind.CLIENT
    (finding,) = d.findings
    assert finding.evidence["loop_lag_ms"] == 80.0
