"""A watch kept as one run under its name, resumed by name.

:func:`watch_endpoint` finds the run of kind ``watch`` whose ``meta["name"]`` is the
watch's name (or starts one), counts what it already spent against the budget, and
appends every tick's samples as they finish. Ctrl-C (or any error) marks the run
``interrupted``: every finished trace is already stored. The ticks skipped because
the one before them overran are counted in ``meta["skipped_ticks"]``, resumes
included. :func:`latdoc.pipeline.watch_clock` reads a watch back by the clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from latdoc.errors import UsageError
from latdoc.features.watch.send import WatchPlan, WatchResult, known_calibration, run_watch
from latdoc.pipeline import host_meta
from latdoc.pipeline._clock import SKIPPED_TICKS, WATCH_KIND, skipped_ticks
from latdoc.probe import Endpoint
from latdoc.records import Sample, Step
from latdoc.store import RunInfo, Store
from latdoc.workload import Budget, TokenCalibration

DURATION_S = 86400.0
"""How long a watch lasts from its first start, when not given: a day."""
MAX_REQUESTS = 1000
"""Requests a watch sends over its whole life, resumes included, when not given."""


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


def watch_endpoint(
    plan: WatchPlan,
    *,
    store: Store,
    name: str | None = None,
    max_requests: int = MAX_REQUESTS,
    token_budget: int | None = None,
    duration_s: float | None = DURATION_S,
    on_sample: Callable[[Sample], None] | None = None,
    on_start: Callable[[str, bool], None] | None = None,
    clock: Callable[[], float] = time.time,
) -> WatchRun:
    """Run (or resume) the watch ``name`` (default :func:`watch_name`); its duration
    counts from its first start, and ``None`` sends one tick."""
    if name is None:
        name = watch_name(plan.endpoint)
    if not name:
        raise UsageError("--name must not be empty")
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
        run_id = store.new_run(
            endpoint=plan.endpoint.base_url,
            model=plan.endpoint.model,
            scenario="",
            meta={**host_meta(), "name": name, "options": _options(plan), SKIPPED_TICKS: 0},
            kind=WATCH_KIND,
        )
        requests, tokens, first_index, skipped_before = 0, 0, 0, 0
        started = clock()
    if on_start is not None:
        on_start(run_id, bool(existing))
    budget = Budget(max_requests=max_requests, token_budget=token_budget)
    budget.requests, budget.tokens = requests, tokens
    if requests >= max_requests or (token_budget is not None and tokens >= token_budget):
        store.finish_run(run_id, status="done", diagnosis=None)
        return WatchRun(run_id, name, bool(existing), WatchResult(0, 0, "budget"))
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
    try:
        result = asyncio.run(run_watch(plan, budget, keep, clock=clock, on_skip=count_skipped))
        status = "done"
    finally:
        store.update_meta(run_id, {SKIPPED_TICKS: skipped})
        store.finish_run(run_id, status=status, diagnosis=None)
    return WatchRun(run_id, name, bool(existing), result)


def _stored_calibration(store: Store, info: RunInfo, plan: WatchPlan) -> TokenCalibration | None:
    """The calibration the watch made when it started, so a resume does not pay for it again
    (only when the long prompt's length, which the calibration was fitted near, is the same)."""
    if info.meta.get("options", {}).get("long_tokens") != plan.long_tokens:
        return None
    counts = store.prompt_tokens(info.run_id, Step.CALIBRATION)
    return known_calibration(plan.long_tokens, counts[:2])


def _check_same_target(info: RunInfo, plan: WatchPlan) -> None:
    for what, stored, asked in (
        ("endpoint", info.endpoint, plan.endpoint.base_url),
        ("model", info.model, plan.endpoint.model),
    ):
        if stored != asked:
            raise UsageError(
                f"watch {info.meta.get('name')!r} measures {what} {stored}, not {asked}; "
                "give another --name for a new watch"
            )


def _options(plan: WatchPlan) -> dict[str, Any]:
    return {
        "every_s": plan.every_s,
        "jitter": plan.jitter,
        "short_tokens": plan.short_tokens,
        "long_tokens": plan.long_tokens,
        "max_tokens": plan.max_tokens,
        "http2": plan.connection.http2,
    }
