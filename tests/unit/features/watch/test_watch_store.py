"""``report --watch`` read from the store's narrow rows, against the same report computed
from every decoded trace, and the store queries behind it."""

from __future__ import annotations

import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from latdoc import ErrorKind, Phase, RequestTrace, Sample, Step, Store, TraceError, watch_clock
from latdoc.cli import EXIT_USAGE, main
from latdoc.features.watch.analysis import ClockPoint, clock_report

DAY = datetime(2026, 11, 29, tzinfo=UTC)


URL = "https://api.example.com/v1/chat/completions"


SHORT, LONG = 64, 1024


MS = 1_000_000


def _trace(rng: random.Random, at: datetime, ttft_ms: float, failure: str | None) -> RequestTrace:
    first = round(ttft_ms * MS)
    tokens = rng.randint(1, 40)
    error = None
    status = 200
    if failure == "429":
        error, status = TraceError(ErrorKind.HTTP, Phase.WAIT, "rate limited", 429), 429
    elif failure == "broken":
        # Failed after its first token: a TTFT and a TPOT that are not the endpoint's.
        error = TraceError(ErrorKind.STREAM_BROKEN, Phase.STREAM, "reset")
    return RequestTrace(
        started_at=at,
        t0_ns=0,
        url=URL,
        model="m",
        dialect="chat",
        first_token_ns=None if failure == "429" else first,
        done_ns=None if failure == "429" else first + tokens * rng.randint(5, 30) * MS,
        output_tokens=None if failure == "429" else tokens,
        status=status,
        error=error,
    )


def _watch_samples(n_ticks: int, seed: int) -> list[Sample]:
    """Ticks over two simulated days (slow 13:00-18:00), each a cold short, a warm short and
    a long request; calibrations first, a few ticks with another short length, some errors."""
    rng = random.Random(seed)
    samples = [
        Sample(Step.CALIBRATION, _trace(rng, DAY, 900.0, None), 300, index=i) for i in range(2)
    ]
    for tick in range(n_ticks):
        at = DAY + timedelta(seconds=rng.uniform(0, 2 * 86_400))
        busy = 2.5 if 13 <= at.hour < 18 else 1.0
        short = SHORT if tick % 17 else 32
        for tokens, cold in ((short, True), (short, False), (LONG, False)):
            roll = rng.random()
            failure = "429" if roll < 0.06 else "broken" if roll < 0.1 else None
            ttft = rng.lognormvariate(4.5, 0.3) * busy * (3 if tokens == LONG else 1)
            trace = _trace(rng, at, ttft, failure)
            samples.append(Sample(Step.WATCH, trace, tokens, 1, cold, len(samples)))
            at += timedelta(milliseconds=ttft + 40)
    return samples


def _from_decoded_traces(store: Store, name: str, bucket_s: float, cycle_s: float | None) -> object:
    """The report as it was computed from every decoded trace of the watch."""
    (info,) = store.find_runs("watch", name)
    _, samples, _ = store.load_run(info.run_id)
    short = info.meta["options"]["short_tokens"]
    points = [
        ClockPoint(
            at=s.trace.started_at,
            ttft_ms=s.trace.ttft_ms,
            tpot_ms=s.trace.tpot_ms,
            ok=s.trace.error is None,
            compared=s.cold and s.target_prompt_tokens == short,
        )
        for s in samples
        if s.step == Step.WATCH
    ]
    return clock_report(points, bucket_s=bucket_s, cycle_s=cycle_s, seed=0)


@pytest.fixture(scope="module")
def recorded_watch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The watch's store, written once for the module: each test reads a copy of its file."""
    db = tmp_path_factory.mktemp("watch") / "watch.db"
    with Store(db) as store:
        run_id = store.new_run(
            endpoint=URL,
            model="m",
            scenario="",
            meta={"name": "day", "options": {"short_tokens": SHORT}},
            kind="watch",
        )
        store.add_samples(run_id, _watch_samples(700, seed=5))
        store.finish_run(run_id, status="done", diagnosis=None)
    return db


@pytest.fixture
def watch_db(recorded_watch: Path, tmp_path: Path) -> Path:
    """A store of its own for the test (one test keeps a verdict in it): the closed store's
    folder copied whole."""
    return shutil.copytree(recorded_watch.parent, tmp_path / "watch") / recorded_watch.name


@pytest.mark.parametrize(
    ("bucket_s", "cycle_s"), [(3600.0, 86_400.0), (900.0, 86_400.0), (1800.0, 7200.0),
                              (7200.0, None)],
)  # fmt: skip
def test_the_store_path_gives_the_report_of_the_decoded_traces(
    watch_db: Path, bucket_s: float, cycle_s: float | None
) -> None:
    with Store(watch_db) as store:
        expected = _from_decoded_traces(store, "day", bucket_s, cycle_s)
        got = watch_clock(store, "day", bucket_s=bucket_s, cycle_s=cycle_s).report
    assert got == expected
    if cycle_s == 86_400.0 and bucket_s == 3600.0:
        assert got.pattern and got.peak is not None
        assert got.peak.ranges == ("13:00–18:00 UTC",)


def test_bucket_ttfts_keeps_successful_compared_samples_in_sample_order(watch_db: Path) -> None:
    with Store(watch_db) as store:
        (info,) = store.find_runs("watch", "day")
        _, samples, _ = store.load_run(info.run_id)
        got = store.bucket_ttfts(
            info.run_id, cycle=timedelta(days=1), steps=[Step.WATCH], cold=True,
            target_prompt_tokens=SHORT,
        )  # fmt: skip
        warm = store.bucket_ttfts(info.run_id, cycle=timedelta(days=1), cold=False)
    expected: dict[int, list[float]] = {}
    for s in samples:
        t = s.trace
        if s.step == Step.WATCH and s.cold and s.target_prompt_tokens == SHORT and t.ok:
            assert t.ttft_ms is not None
            expected.setdefault(t.started_at.hour, []).append(t.ttft_ms)
    assert {k: v.tolist() for k, v in got.items()} == expected
    n_warm = sum(len(v) for v in warm.values())
    assert n_warm == sum(1 for s in samples if not s.cold and s.trace.ok)


def test_aggregate_leaves_failed_requests_out_of_its_percentiles(watch_db: Path) -> None:
    with Store(watch_db) as store:
        (info,) = store.find_runs("watch", "day")
        _, samples, _ = store.load_run(info.run_id)
        (whole,) = store.aggregate(info.run_id, bucket=timedelta(days=36_500))
    traces = [s.trace for s in samples]
    assert any(not t.ok and t.ttft_ms is not None for t in traces), "failed with a TTFT"
    ttft_ok = [t.ttft_ms for t in traces if t.ok and t.ttft_ms is not None]
    tpot_ok = [t.tpot_ms for t in traces if t.ok and t.tpot_ms is not None]
    ttft_all = [t.ttft_ms for t in traces if t.ttft_ms is not None]
    assert whole.requests == len(samples)
    assert whole.errors == sum(1 for t in traces if not t.ok)
    assert whole.ttft_p50_ms == float(np.percentile(ttft_ok, 50))
    assert whole.ttft_p95_ms == float(np.percentile(ttft_ok, 95))
    assert whole.tpot_p50_ms == float(np.percentile(tpot_ok, 50))
    assert whole.ttft_p95_ms != float(np.percentile(ttft_all, 95))


def test_a_cycle_that_is_not_whole_buckets_is_a_usage_error(
    watch_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["report", "--watch", "day", "--cycle", "24h", "--bucket", "7h", "--db", str(watch_db)]
    assert main(args) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("Error: the cycle (86400 s) is not a whole number of buckets")
    assert err.count("\n") == 1


def test_the_verdict_by_hour_a_watch_keeps_is_what_a_diagnosis_reads(watch_db: Path) -> None:
    from latdoc.pipeline import keep_hourly_verdict, latest_watch, watch_note

    with Store(watch_db) as store:
        info = latest_watch(store, URL, "m")
        assert info is not None and latest_watch(store, URL, "other") is None
        # A watch stored before it kept its verdict says nothing to a diagnosis.
        assert watch_note(store, URL, "m") is None
        clock = watch_clock(store, "day", bucket_s=3600.0)
        keep_hourly_verdict(store, info.run_id, clock.report.verdict)
        note = watch_note(store, URL, "m")
    assert note is not None and note.step == Step.LOAD
    assert note.text == (
        f"watch 'day' ({info.requests} requests by hour of day): {clock.report.verdict}"
    )
    assert "13:00–18:00 UTC" in note.text


@pytest.mark.parametrize(
    ("asked", "spans"),
    [
        ({}, (3600.0, 86_400.0, "by hour of day (UTC)")),
        ({"by_hour_of_day": True, "bucket_s": 900.0}, (900.0, 86_400.0, "by hour of day (UTC)")),
        ({"bucket_s": 900.0}, (900.0, None, "buckets of 15m")),
        ({"cycle_s": 64.0}, (64 / 24, 64.0, "buckets of 2.66667s over a 64s cycle")),
        ({"cycle_s": 64.0, "bucket_s": 8.0}, (8.0, 64.0, "buckets of 8s over a 64s cycle")),
    ],
)
def test_clock_spans_fill_in_what_report_watch_was_not_given(
    asked: dict[str, Any], spans: tuple[float, float | None, str]
) -> None:
    from latdoc.features.watch import clock_spans

    got = clock_spans(**asked)
    assert (got.bucket_s, got.cycle_s, got.how) == spans


@pytest.mark.parametrize(
    "asked", [{"cycle_s": 60.0, "bucket_s": 120.0}, {"by_hour_of_day": True, "bucket_s": 2e5}]
)
def test_clock_spans_refuse_a_bucket_longer_than_its_cycle(asked: dict[str, Any]) -> None:
    from latdoc.errors import UsageError
    from latdoc.features.watch import clock_spans

    with pytest.raises(UsageError, match="--bucket must not be longer"):
        clock_spans(**asked)
