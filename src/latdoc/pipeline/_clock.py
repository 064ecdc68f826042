"""A watch read back by the clock, sending nothing.

A watch is kept as one run of kind ``watch`` under its name
(:mod:`latdoc.features.watch` sends it). :func:`watch_clock` reads it back and computes
its report by the clock (the method's third step: the same requests at quiet and busy
hours); :func:`watch_note` is what the newest watch of an endpoint tells a diagnosis.
The ticks a watch skipped because the one before them overran are in
``meta["skipped_ticks"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from latdoc.analysis.clock import (
    DAY_S,
    HOUR_S,
    BucketCounts,
    ClockReport,
    clock_report_of_buckets,
)
from latdoc.errors import UsageError
from latdoc.records import Step, StepNote
from latdoc.store import RunInfo, Store

WATCH_KIND = "watch"
SKIPPED_TICKS = "skipped_ticks"


def skipped_ticks(info: RunInfo) -> int | None:
    """The ticks a watch skipped, all runs of it together; ``None`` for a watch stored
    before they were counted."""
    value = info.meta.get(SKIPPED_TICKS)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class WatchClock:
    """A watch read back by the clock: its run, its name, the report by bucket and the
    ticks it skipped."""

    info: RunInfo
    name: str
    report: ClockReport
    skipped_ticks: int | None = None
    """Ticks not sent because the one before them ran past their slot (``None``: a
    watch stored before they were counted)."""


def watch_clock(
    store: Store,
    name: str,
    *,
    bucket_s: float,
    cycle_s: float | None = DAY_S,
    seed: int = 0,
) -> WatchClock:
    """The watch ``name``'s requests by the clock (see
    :func:`~latdoc.analysis.clock.clock_report`), summarised by the store per bucket."""
    runs = store.find_runs(WATCH_KIND, name)
    if not runs:
        known = sorted({str(r.meta.get("name")) for r in store.find_runs(WATCH_KIND)})
        hint = f"; watches in {store.path}: {', '.join(known)}" if known else ""
        raise UsageError(f"no watch named {name!r}{hint}")
    info = runs[0]
    bucket, cycle = _spans(bucket_s, cycle_s)
    # Counted and ranked by the store from its narrow rows: no trace record is decoded.
    counts = [
        BucketCounts(b.bucket, b.requests, b.errors, b.tpot_p50_ms)
        for b in store.aggregate(info.run_id, bucket=bucket, cycle=cycle, steps=[Step.WATCH])
    ]
    short = info.meta.get("options", {}).get("short_tokens")
    ttfts = store.bucket_ttfts(
        info.run_id,
        bucket=bucket,
        cycle=cycle,
        steps=[Step.WATCH],
        cold=True,
        target_prompt_tokens=short if isinstance(short, int) else None,
    )
    report = clock_report_of_buckets(counts, ttfts, bucket_s=bucket_s, cycle_s=cycle_s, seed=seed)
    return WatchClock(info, name, report, skipped_ticks(info))


def _spans(bucket_s: float, cycle_s: float | None) -> tuple[timedelta, timedelta | None]:
    """The bucket and cycle to the microsecond; a cycle must be a whole number of buckets."""
    bucket_us = max(1, round(bucket_s * 1e6))
    if cycle_s is None:
        return timedelta(microseconds=bucket_us), None
    cycle_us = round(cycle_s * 1e6)
    if cycle_us % bucket_us:
        raise UsageError(
            f"the cycle ({cycle_s:g} s) is not a whole number of buckets ({bucket_s:g} s); "
            "give a --bucket that divides --cycle"
        )
    return timedelta(microseconds=bucket_us), timedelta(microseconds=cycle_us)


def latest_watch(store: Store, endpoint: str, model: str) -> RunInfo | None:
    """The newest watch of this endpoint and model, if any."""
    for info in store.find_runs(WATCH_KIND):
        if info.endpoint == endpoint and info.model == model and info.requests > 0:
            return info
    return None


def watch_note(store: Store, endpoint: str, model: str) -> StepNote | None:
    """What the newest watch of this endpoint and model says about the time of day, as a
    note for the load step of a diagnosis (its single-moment measurement cannot tell)."""
    info = latest_watch(store, endpoint, model)
    if info is None:
        return None
    name = str(info.meta.get("name", info.run_id))
    clock = watch_clock(store, name, bucket_s=HOUR_S)
    return StepNote(
        Step.LOAD,
        f"watch {name!r} ({info.requests} requests by hour of day): {clock.report.verdict}",
    )
