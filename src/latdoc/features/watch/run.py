"""A watch kept as one run under its name, resumed by name.

:func:`watch_endpoint` finds the run of kind ``watch`` whose ``meta["name"]`` is the
watch's name (or starts one), counts what it already spent against the budget, and
appends every tick's samples as they finish. Ctrl-C (or any error) marks the run
``interrupted``: every finished trace is already stored. The ticks skipped because
the one before them overran are counted in ``meta["skipped_ticks"]``, resumes
included. After it has sent, the watch is read back by hour of day (:attr:`WatchRun.clock`)
and its verdict kept for a diagnosis (:func:`latdoc.pipeline.watch_note`).

:func:`watch_clock` reads a watch back by the clock, sending nothing: the store counts
and ranks its requests per bucket and :mod:`~latdoc.features.watch.analysis` finds the
peak; :func:`clock_spans` is how ``latdoc report --watch`` cuts the buckets when asked
with some of ``--by``, ``--bucket`` and ``--cycle`` or none.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from latdoc.errors import UsageError
from latdoc.features.watch.analysis import (
    DAY_S,
    HOUR_S,
    BucketCounts,
    ClockReport,
    clock_report_of_buckets,
)
from latdoc.features.watch.render import ShownClock, duration_text
from latdoc.features.watch.send import WatchPlan, WatchResult, known_calibration, run_watch
from latdoc.i18n import N_, Message
from latdoc.model import cost_of, planned_cost, price_to_dict
from latdoc.pipeline import WATCH_KIND, host_meta, keep_hourly_verdict
from latdoc.probe import Endpoint
from latdoc.records import Sample, Step
from latdoc.store import RunInfo, Store
from latdoc.workload import ASSUMED, Budget, TokenCalibration, prompt_cost

DURATION_S = 86400.0
"""How long a watch lasts from its first start, when not given: a day."""
MAX_REQUESTS = 1000
"""Requests a watch sends over its whole life, resumes included, when not given."""
SKIPPED_TICKS = "skipped_ticks"
HOUR_OF_DAY_TITLE = "by hour of day (UTC)"


def watch_name(endpoint: Endpoint) -> str:
    """The name a watch of ``endpoint`` goes by when none is given: ``MODEL@HOST``."""
    return f"{endpoint.model}@{urlsplit(endpoint.base_url).netloc}"


@dataclass(frozen=True)
class WatchRun:
    """A watch kept as a run: its id, its name, whether it resumed an earlier one, and
    what it sent."""

    run_id: str
    name: str
    resumed: bool
    result: WatchResult | None
    """``None`` when the watch was interrupted before it ended."""
    clock: WatchClock | None = None
    """The whole watch by hour of day, read back after it sent (also when interrupted)."""


def watch_endpoint(
    plan: WatchPlan,
    *,
    store: Store,
    name: str | None = None,
    max_requests: int = MAX_REQUESTS,
    token_budget: int | None = None,
    max_cost: float | None = None,
    duration_s: float | None = DURATION_S,
    on_sample: Callable[[Sample], None] | None = None,
    on_start: Callable[[str, bool], None] | None = None,
    clock: Callable[[], float] = time.time,
) -> WatchRun:
    """Run (or resume) the watch ``name`` (default :func:`watch_name`); its duration
    counts from its first start, and ``None`` sends one tick. Its caps (``max_requests``,
    ``token_budget``, ``max_cost`` at the plan's price) span the whole watch, resumes
    included. Ctrl-C ends it with every finished trace kept (``result`` is then
    ``None``); either way the whole watch is read back by hour of day and its verdict
    kept for a diagnosis."""
    if name is None:
        name = watch_name(plan.endpoint)
    if not name:
        raise UsageError(N_("--name must not be empty"))
    existing = store.find_runs(WATCH_KIND, name)
    if existing:
        info = existing[0]
        _check_same_target(info, plan)
        run_id = info.run_id
        requests, tokens, first_index = store.spent(run_id)
        skipped_before = skipped_ticks(info) or 0
        plan = replace(plan, calibration=_stored_calibration(store, info, plan))
        started = info.started_at.timestamp()
        store.reopen_run(run_id)
    else:
        run_id = _open_watch(store, plan, name)
        requests, tokens, first_index, skipped_before = 0, 0, 0, 0
        started = clock()
    if on_start is not None:
        on_start(run_id, bool(existing))
    budget = Budget(
        max_requests=max_requests, token_budget=token_budget, max_cost=max_cost, price=plan.price
    )
    budget.requests, budget.tokens = requests, tokens
    if existing and plan.price is not None:
        budget.spent = _spent(store, run_id, plan)
    if requests >= max_requests or (token_budget is not None and tokens >= token_budget):
        store.finish_run(run_id, status="done", diagnosis=None)
        by_hour = _read_by_hour(store, run_id, name)
        return WatchRun(run_id, name, bool(existing), WatchResult(0, 0, "budget"), by_hour)
    until = None if duration_s is None else started + duration_s
    plan = replace(plan, until=until, first_index=first_index)

    def keep(sample: Sample) -> None:
        store.add_sample(run_id, sample)
        if on_sample is not None:
            on_sample(sample)

    skipped = skipped_before

    def count_skipped(ticks: int) -> None:
        nonlocal skipped
        skipped += ticks

    status = "interrupted"
    result: WatchResult | None = None
    try:
        result = asyncio.run(run_watch(plan, budget, keep, clock=clock, on_skip=count_skipped))
        status = "done"
    except KeyboardInterrupt:
        pass
    finally:
        store.update_meta(run_id, {SKIPPED_TICKS: skipped})
        store.finish_run(run_id, status=status, diagnosis=None)
    return WatchRun(run_id, name, bool(existing), result, _read_by_hour(store, run_id, name))


def _open_watch(store: Store, plan: WatchPlan, name: str) -> str:
    """A new watch's run: its name, options and price kept in its meta."""
    return store.new_run(
        endpoint=plan.endpoint.base_url,
        model=plan.endpoint.model,
        scenario="",
        meta={
            **host_meta(),
            "name": name,
            "options": _options(plan),
            SKIPPED_TICKS: 0,
            **({} if plan.price is None else {"price": price_to_dict(plan.price)}),
        },
        kind=WATCH_KIND,
    )


def _read_by_hour(store: Store, run_id: str, name: str) -> WatchClock:
    """The watch by hour of day, its verdict kept for a diagnosis."""
    clock = watch_clock(store, name, bucket_s=HOUR_S)
    keep_hourly_verdict(store, run_id, clock.report.verdict)
    return clock


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

    def shown(self, title: str) -> ShownClock:
        """The watch as the command shows it, its table under ``title``."""
        info = self.info
        return ShownClock(
            self.report, self.name, info.run_id, info.endpoint, title, self.skipped_ticks
        )


def watch_clock(
    store: Store,
    name: str,
    *,
    bucket_s: float,
    cycle_s: float | None = DAY_S,
    seed: int = 0,
) -> WatchClock:
    """The watch ``name``'s requests by the clock (see
    :func:`~latdoc.features.watch.analysis.clock_report`), summarised by the store per
    bucket."""
    runs = store.find_runs(WATCH_KIND, name)
    if not runs:
        known = sorted({str(r.meta.get("name")) for r in store.find_runs(WATCH_KIND)})
        hint = (
            Message("; watches in {path}: {known}", path=str(store.path), known=", ".join(known))
            if known
            else ""
        )
        raise UsageError(Message("no watch named {name!r}{hint}", name=name, hint=Message.of(hint)))
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
            Message(
                "the cycle ({cycle:g} s) is not a whole number of buckets ({bucket:g} s); "
                "give a --bucket that divides --cycle",
                cycle=cycle_s,
                bucket=bucket_s,
            )
        )
    return timedelta(microseconds=bucket_us), timedelta(microseconds=cycle_us)


@dataclass(frozen=True)
class ClockSpans:
    """How a watch is cut when read back: the bucket width, the cycle the buckets fold
    into (``None``: plain time) and the words for a title."""

    bucket_s: float
    cycle_s: float | None
    how: str


def clock_spans(
    *, bucket_s: float | None = None, cycle_s: float | None = None, by_hour_of_day: bool = False
) -> ClockSpans:
    """The buckets asked for: a cycle alone is cut in 24; with no cycle, an hour over the
    UTC day unless a bucket alone asks for a plain time series."""
    if cycle_s is not None:
        bucket = bucket_s if bucket_s is not None else cycle_s / 24
        if bucket > cycle_s:
            raise UsageError(N_("--bucket must not be longer than --cycle"))
        how = f"buckets of {duration_text(bucket)} over a {duration_text(cycle_s)} cycle"
        return ClockSpans(bucket, cycle_s, how)
    if by_hour_of_day or bucket_s is None:
        bucket = bucket_s if bucket_s is not None else HOUR_S
        if bucket > DAY_S:
            raise UsageError(N_("--bucket must not be longer than the day with --by hour-of-day"))
        return ClockSpans(bucket, DAY_S, HOUR_OF_DAY_TITLE)
    return ClockSpans(bucket_s, None, f"buckets of {duration_text(bucket_s)}")


def _stored_calibration(store: Store, info: RunInfo, plan: WatchPlan) -> TokenCalibration | None:
    """The calibration the watch made when it started, so a resume does not pay for it again
    (only when the long prompt's length, which the calibration was fitted near, is the same)."""
    if info.meta.get("options", {}).get("long_tokens") != plan.long_tokens:
        return None
    counts = store.prompt_tokens(info.run_id, Step.CALIBRATION)
    return known_calibration(plan.long_tokens, counts[:2])


def _check_same_target(info: RunInfo, plan: WatchPlan) -> None:
    for what, stored, asked in (
        (N_("endpoint"), info.endpoint, plan.endpoint.base_url),
        (N_("model"), info.model, plan.endpoint.model),
    ):
        if stored != asked:
            raise UsageError(
                Message(
                    "watch {name!r} measures {what} {stored}, not {asked}; give another --name "
                    "for a new watch",
                    name=info.meta.get("name"),
                    what=Message.of(what),
                    stored=stored,
                    asked=asked,
                )
            )


def _spent(store: Store, run_id: str, plan: WatchPlan) -> float:
    """Dollars the watch's earlier runs spent: each request at its reported usage, or,
    where the server reported none, at the worst case the budget reserved it at (the
    prompt's upper bound at the length it asked, the whole ``max_tokens``)."""
    assert plan.price is not None
    calibration = plan.calibration or ASSUMED
    _, samples, _ = store.load_run(run_id)
    spent = 0.0
    for s in samples:
        cost = cost_of(s.trace, plan.price)
        if cost is not None:
            spent += cost.total
            continue
        asked = s.target_prompt_tokens or plan.long_tokens
        prompt = prompt_cost(calibration, calibration.words_for(asked))
        spent += planned_cost(plan.price, prompt, plan.max_tokens)
    return spent


def _options(plan: WatchPlan) -> dict[str, Any]:
    return {
        "every_s": plan.every_s,
        "jitter": plan.jitter,
        "short_tokens": plan.short_tokens,
        "long_tokens": plan.long_tokens,
        "max_tokens": plan.max_tokens,
        "http2": plan.connection.http2,
    }
