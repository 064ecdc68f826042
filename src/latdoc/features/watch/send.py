"""A watch: the same three requests on a schedule, for as long as asked, within a budget.

Each tick opens a new connection and sends, on it, a short prompt (cold: DNS, TCP and
TLS paid), the same length again (warm: the connection reused) and a long prompt of
an exact token count; then the connection is closed, so no tick inherits state from
the one before. Ticks are due every ``every_s`` seconds from the watch's start, each
moved by a uniform jitter of up to ``jitter`` of the interval, so that the probes do
not lock onto another schedule (a provider's own minute-aligned jobs); a tick that
overruns its slot makes the watch skip to the next slot, so ticks stay even in time;
the slots skipped so are counted (:attr:`WatchResult.skipped_ticks`, ``on_skip``).

Every request is reserved in the :class:`Budget` before it is sent and handed to
``on_sample`` when it finishes; nothing is kept here, so a watch of any length holds
one tick's traces at most. This module sends and labels; it prints nothing.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from latdoc.errors import CalibrationError, UsageError
from latdoc.i18n import N_, Message
from latdoc.model import Price
from latdoc.probe import ConnectionOptions, Endpoint, ProbeSession
from latdoc.records import RequestTrace, Sample, Step
from latdoc.workload import (
    ASSUMED,
    Budget,
    TokenCalibration,
    calibrate,
    calibration_words,
    fit_calibration,
    make_prompt,
    prompt_cost,
)

SHORT_TOKENS = 64
LONG_TOKENS = 1024
REQUESTS_PER_TICK = 3
EVERY_S = 300.0
"""Seconds between ticks when not given."""

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class WatchTooFast(UsageError):
    """A tick took longer than the interval between ticks."""


@dataclass(frozen=True)
class WatchPlan:
    """What a watch sends: a cold short, a warm short and a long request every
    ``every_s`` seconds (with jitter), until ``until``."""

    endpoint: Endpoint
    every_s: float = EVERY_S
    until: float | None = None
    """Wall-clock time (Unix seconds) after which no tick starts; ``None``: one tick."""
    connection: ConnectionOptions = field(default_factory=ConnectionOptions)
    jitter: float = 0.1
    short_tokens: int = SHORT_TOKENS
    long_tokens: int = LONG_TOKENS
    max_tokens: int = 32
    calibration: TokenCalibration | None = None
    """How the endpoint counts prompts, when already known (a resumed watch's)."""
    first_index: int = 0
    """Index of the first sample this invocation stores (a resumed watch continues)."""
    seed: int | None = None
    price: Price | None = None
    """The model's price, where latdoc's price library knows it or the user gave it."""

    def __post_init__(self) -> None:
        if not self.every_s > 0:
            raise UsageError(N_("--every must be more than 0"))
        if not 0 <= self.jitter <= 0.5:
            raise UsageError(
                Message("--jitter must be between 0 and 0.5, got {jitter:g}", jitter=self.jitter)
            )
        if self.long_tokens <= self.short_tokens:
            raise UsageError(
                Message(
                    "--long-tokens ({long_tokens}) must be more than the short prompt's "
                    "{short_tokens} tokens",
                    long_tokens=self.long_tokens,
                    short_tokens=self.short_tokens,
                )
            )


@dataclass(frozen=True)
class WatchResult:
    """What a watch sent: ticks, requests, why it stopped and the ticks it skipped."""

    ticks: int
    requests: int
    stopped_by: str
    """``time`` (the duration ended), ``budget``, or ``once`` (one tick was asked for)."""
    skipped_ticks: int = 0
    """Ticks not sent because the tick before them ran past their slot."""


async def run_watch(
    plan: WatchPlan,
    budget: Budget,
    on_sample: Callable[[Sample], None],
    *,
    clock: Clock = time.time,
    sleep: Sleep = asyncio.sleep,
    on_skip: Callable[[int], None] | None = None,
) -> WatchResult:
    """Tick until ``plan.until`` or the budget ends; raise :class:`WatchTooFast` when the
    first tick is longer than the interval. ``on_skip`` hears of each overrun, with the
    number of ticks it skipped, as it happens (a watch stopped by Ctrl-C keeps count)."""
    rng = random.Random(plan.seed)
    index = plan.first_index
    requests = skipped = 0

    def keep(sample: Sample) -> None:
        nonlocal index, requests
        on_sample(Sample(sample.step, sample.trace, sample.target_prompt_tokens, 1,
                         sample.cold, index))  # fmt: skip
        index += 1
        requests += 1

    if plan.until is not None and clock() >= plan.until:
        return WatchResult(0, 0, "time")
    calibration = plan.calibration or await _calibrate(plan, budget, rng, keep)
    start = clock()
    ticks = slot = 0
    while True:
        began = clock()
        sent = await _tick(plan, budget, calibration, rng, keep)
        if sent < REQUESTS_PER_TICK:
            return WatchResult(ticks + (sent > 0), requests, "budget", skipped)
        ticks += 1
        took = clock() - began
        if ticks == 1 and plan.until is not None and took > plan.every_s:
            raise WatchTooFast(
                Message(
                    "one tick took {took:.1f} s, longer than --every {every:g}s; give an "
                    "interval longer than three requests",
                    took=took,
                    every=plan.every_s,
                )
            )
        if plan.until is None:
            return WatchResult(ticks, requests, "once", skipped)
        now = clock()
        # A tick that overran skips the slots it covered rather than catching up with
        # ticks back to back: a burst would sample the lull after a slow spell many times
        # and the slow spell once, hiding the very peak the watch is looking for.
        following = max(slot + 1, math.floor((now - start) / plan.every_s) + 1)
        last = math.ceil((plan.until - start) / plan.every_s)  # slots due before the end
        missed = max(0, min(following, last) - slot - 1)
        slot = following
        if missed:
            skipped += missed
            if on_skip is not None:
                on_skip(missed)
        due = start + slot * plan.every_s + rng.uniform(-plan.jitter, plan.jitter) * plan.every_s
        if due >= plan.until:
            return WatchResult(ticks, requests, "time", skipped)
        if due > now:
            await sleep(due - now)


async def _calibrate(
    plan: WatchPlan, budget: Budget, rng: random.Random, keep: Callable[[Sample], None]
) -> TokenCalibration:
    costs = [prompt_cost(ASSUMED, w) for w in calibration_words(plan.long_tokens)]
    if not budget.can_afford(max(costs), 1, count=2):
        return ASSUMED
    reservations = [r for cost in costs if (r := budget.reserve(cost, 1)) is not None]
    async with plan.connection.session(plan.endpoint) as session:
        try:
            calibration, traces = await calibrate(session, rng, near_tokens=plan.long_tokens)
        except CalibrationError:
            return ASSUMED
    for reservation, trace in zip(reservations, traces, strict=False):
        budget.settle(reservation, trace)
        keep(Sample(Step.CALIBRATION, trace, trace.prompt_tokens))
    return calibration


async def _tick(
    plan: WatchPlan,
    budget: Budget,
    calibration: TokenCalibration,
    rng: random.Random,
    keep: Callable[[Sample], None],
) -> int:
    """One tick's three requests on one new connection; how many were sent."""
    sent = 0
    async with plan.connection.session(plan.endpoint) as session:
        for tokens, cold in (
            (plan.short_tokens, True),
            (plan.short_tokens, False),
            (plan.long_tokens, False),
        ):
            trace = await _send(plan, budget, calibration, rng, session, tokens)
            if trace is None:
                return sent
            keep(Sample(Step.WATCH, trace, tokens, 1, cold))
            sent += 1
    return sent


async def _send(
    plan: WatchPlan,
    budget: Budget,
    calibration: TokenCalibration,
    rng: random.Random,
    session: ProbeSession,
    tokens: int,
) -> RequestTrace | None:
    words = calibration.words_for(tokens)
    cost = prompt_cost(calibration, words)
    reservation = budget.reserve(cost, plan.max_tokens)
    if reservation is None:
        return None
    trace = await session.request(make_prompt(words, rng), plan.max_tokens)
    budget.settle(reservation, trace)
    return trace


def known_calibration(long_tokens: int, counts: list[int | None]) -> TokenCalibration | None:
    """The calibration a watch's two stored calibration requests give (``counts``: the
    prompt tokens the endpoint counted for each), or ``None`` if they cannot give one."""
    if len(counts) != 2 or counts[0] is None or counts[1] is None:
        return None
    try:
        return fit_calibration(calibration_words(long_tokens), (counts[0], counts[1]))
    except CalibrationError:
        return None
