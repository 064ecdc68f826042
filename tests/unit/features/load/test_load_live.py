"""A sweep still running (or killed before it kept its record) is read from its requests:
its levels in the order they ran, the last one partial, so a live page shows what has
been measured so far."""

from __future__ import annotations

from dataclasses import replace

from latdoc.features.load.analysis import analyse_load, windows_kept
from latdoc.records import Sample, Step
from report_samples import make_trace

MS = 1_000_000


def _sample(step: Step, concurrency: int, start_ms: int, index: int) -> Sample:
    trace = replace(make_trace(dns=None, connect=None, tls=None), t0_ns=start_ms * MS)
    return Sample(step, trace, concurrency=concurrency, index=index)


def test_levels_are_read_in_the_order_they_ran_the_last_partial() -> None:
    samples = [
        _sample(Step.LOAD, 4, 0, 0),
        _sample(Step.LOAD, 4, 500, 1),
        _sample(Step.LOAD, 1, 3000, 2),
        _sample(Step.CALIBRATION, 1, 0, 3),
        _sample(Step.LOAD, 8, 6000, 4),
    ]
    windows = windows_kept(samples)
    assert [w.concurrency for w in windows] == [4, 1, 8]
    assert [w.partial for w in windows] == [False, False, True]
    first = windows[0]
    done = samples[1].trace.t0_ns + (samples[1].trace.done_ns or 0)
    assert (first.start_ns, first.end_ns) == (0, done)
    analysis = analyse_load(windows, samples)
    assert [lv.requests for lv in analysis.levels] == [2, 1, 1]


def test_arrival_levels_take_their_rate_from_the_plan() -> None:
    samples = [_sample(Step.ARRIVALS, 1, 0, 0), _sample(Step.ARRIVALS, 2, 2000, 1)]
    windows = windows_kept(samples, rates=(0.5, 2.0))
    assert [(w.number, w.rate) for w in windows] == [(1, 0.5), (2, 2.0)]
    assert windows_kept(samples) == [], "a rate the plan does not name is not guessed"


def test_no_requests_no_levels() -> None:
    assert windows_kept([]) == []
