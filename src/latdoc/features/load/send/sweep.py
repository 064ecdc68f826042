"""A load sweep: levels of closed-loop concurrency or of open-loop arrival rates.

- **Closed loop** (``concurrency``): N workers each send the next request as soon
  as the last one ends, for the level's duration. The load is what the server
  lets through: a slow server slows the arrivals too.
- **Open loop** (``rates``): arrivals at exponential gaps (a Poisson process,
  seeded), each sent at its scheduled time whatever the server is doing, with at
  most ``max_in_flight`` requests open at once. The schedule is kept so the rate
  the client achieved can be told apart from the rate asked for.

Every request is reserved in the :class:`Budget` before it is sent; a level ends
at its duration, when the budget runs out, or when its share of failed requests
passes ``max_error_rate`` (the sweep then stops). Each finished request reaches
``on_sample`` at once, each level ``on_level`` as it ends and each note ``on_note``
as it is made, also when the run is cancelled, so an interrupted sweep keeps
everything it finished: the level it was in is marked ``partial``. Every stream (or
open-loop request in flight) has a one-connection session of its own, so the
client's pool never holds a request back by design.
This module sends and labels; it computes no statistic and prints nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field

from latdoc.errors import UsageError
from latdoc.features.load.analysis import LevelWindow
from latdoc.features.load.send.heap import kept_out_of_collection
from latdoc.features.load.send.meter import ClientMeter
from latdoc.i18n import Message
from latdoc.model import Price
from latdoc.probe import (
    ConnectionOptions,
    Endpoint,
    EventHook,
    ProbeSession,
    now_ns,
)
from latdoc.records import RequestTrace, Sample, Step, StepNote
from latdoc.workload import ASSUMED, Budget, budget_for, make_prompt, prompt_cost

DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16)
"""The closed-loop levels a sweep runs when it is given neither levels nor rates."""
MIN_FOR_ERROR_RATE = 5
"""Finished requests a level needs before its error rate may stop the sweep."""
_NS = 1_000_000_000


def parse_levels(text: str) -> tuple[int, ...]:
    """``1,2,4,8``: closed-loop levels, whole numbers of at least 1, in the order given."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise UsageError(Message("not a list of whole numbers: {text!r}", text=text)) from None
    if not values or min(values) < 1:
        raise UsageError(Message("each level must be at least 1: {text!r}", text=text))
    return values


def parse_rates(text: str) -> tuple[float, ...]:
    """``0.5,1,2,4``: open-loop levels, requests per second, each more than 0."""
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise UsageError(Message("not a list of rates: {text!r}", text=text)) from None
    if not values or min(values) <= 0:
        raise UsageError(Message("each rate must be more than 0: {text!r}", text=text))
    return values


LevelHook = Callable[[LevelWindow], None]
ProgressHook = Callable[[str, int, int], None]


@dataclass(frozen=True)
class LoadPlan:
    """What a load sweep sends: closed-loop concurrency levels or open-loop arrival
    rates, each for a duration, within a budget."""

    endpoint: Endpoint
    connection: ConnectionOptions = field(default_factory=ConnectionOptions)
    concurrency: tuple[int, ...] = ()
    """Closed-loop levels; exactly one of this and ``rates`` is set (neither:
    :data:`DEFAULT_CONCURRENCY`)."""
    rates: tuple[float, ...] = ()
    """Open-loop levels, requests per second."""
    duration_per_level: float = 10.0
    prompt_tokens: int = 64
    max_tokens: int = 64
    max_requests: int = 2000
    token_budget: int | None = None
    max_seconds: float = 600.0
    max_error_rate: float = 0.5
    max_in_flight: int = 64
    """Open loop: requests open at once, at most."""
    burst_start: bool = False
    """Closed loop: every stream sends its first request at the level's start, where by
    default their first sends are spread over one mean request time (``--burst-start``)."""
    seed: int | None = None
    max_cost: float | None = None
    """Dollars the run may spend, counted at :attr:`price`; ``None`` for no cap."""
    price: Price | None = None
    """The model's price, where latdoc's price library knows it or the user gave it."""
    on_event: EventHook | None = field(default=None, compare=False, repr=False)
    """Sees every decoded event of every request with the arrival time its trace uses,
    for fields a trace does not keep (a benchmark reads a server's own stamps there).
    Sent to each worker process or actor, so it must pickle."""

    def __post_init__(self) -> None:
        if not self.concurrency and not self.rates:
            object.__setattr__(self, "concurrency", DEFAULT_CONCURRENCY)

    @property
    def closed_loop(self) -> bool:
        return bool(self.concurrency)

    @property
    def levels(self) -> int:
        return len(self.concurrency) or len(self.rates)

    @property
    def peak_streams(self) -> int:
        """The most streams the sweep may hold open at once."""
        return max(self.concurrency) if self.concurrency else self.max_in_flight


@dataclass
class _Level:
    """One level while it runs: what it sent, whether it must stop and why."""

    number: int
    deadline_ns: int
    done: int = 0
    failed: int = 0
    stop_ns: int | None = None
    reason: str | None = None
    too_many_errors: bool = False

    def stop(self, reason: str) -> None:
        if self.stop_ns is None:
            self.stop_ns = now_ns()
            self.reason = reason

    @property
    def sending(self) -> bool:
        return self.stop_ns is None and now_ns() < self.deadline_ns


class _Sweep:
    def __init__(
        self,
        plan: LoadPlan,
        budget: Budget,
        on_sample: Callable[[Sample], None],
        on_level: LevelHook,
        on_progress: ProgressHook | None,
        on_note: Callable[[StepNote], None] | None,
        worker: int | None = None,
    ) -> None:
        self.plan = plan
        self.on_note = on_note
        self.budget = budget
        self.worker = worker
        self.rng = random.Random(_seed(plan.seed, worker))
        self.on_sample = on_sample
        self.on_level = on_level
        self.on_progress = on_progress
        self.notes: list[StepNote] = []
        self.index = 0
        self.started = 0
        """Requests reserved and sent so far, finished or not."""
        self.words = ASSUMED.words_for(plan.prompt_tokens)
        self.cost = prompt_cost(ASSUMED, self.words)
        self.meter = ClientMeter()
        self.request_ns: list[int] = [0, 0]
        """The successful requests' time end to end so far, summed, and their count: a
        closed level spreads its streams' first sends over their mean."""

    def note(self, text: str) -> None:
        note = StepNote(Step.RUN, text)
        self.notes.append(note)
        if self.on_note is not None:
            self.on_note(note)

    async def send(
        self, session: ProbeSession, level: _Level, step: Step, tag: int, due_ns: int
    ) -> int:
        """Reserve, send and keep one request due at ``due_ns`` (``perf_counter_ns``: its
        arrival, or its stream's last request's end); stop the level when the budget or
        errors say so. Returns when the request ended: when the stream's next is due."""
        out = self.plan.max_tokens
        reservation = self.budget.reserve(self.cost, out)
        if reservation is None:
            level.stop(f"the {self.budget.caps} ran out")
            return now_ns()
        self.started += 1
        prompt = make_prompt(self.words, self.rng)
        trace = await session.request(prompt, out, on_event=self.plan.on_event, due_ns=due_ns)
        self.meter.observe(trace)
        self.budget.settle(reservation, trace)
        if trace.ok and trace.done_ns is not None:
            self.request_ns[0] += trace.done_ns
            self.request_ns[1] += 1
        self.on_sample(
            Sample(step, trace, self.plan.prompt_tokens, tag, index=self.index, worker=self.worker)
        )
        self.index += 1
        level.done += 1
        level.failed += 0 if trace.ok else 1
        if too_many_failed(level.done, level.failed, self.plan.max_error_rate):
            level.too_many_errors = True
            level.stop(
                f"{level.failed} of {level.done} requests failed, more than the "
                f"{self.plan.max_error_rate:.0%} --max-error-rate"
            )
        return ended_ns(trace)

    def _session(self) -> ProbeSession:
        """A session of one connection: one stream's, or one request's at a time."""
        return self.plan.connection.session(self.plan.endpoint, max_connections=1)

    async def closed(
        self, number: int, streams: int, seconds: float, *, level_streams: int | None = None
    ) -> _Level:
        """Closed loop: ``streams`` back to back; ``level_streams`` is the level's whole
        concurrency when this process sends only its share of it."""
        label = streams if level_streams is None else level_streams
        self.meter.start()
        start = now_ns()
        level = _Level(number, start + int(seconds * _NS))
        partial = False
        try:
            # A pool of its own for each stream: httpcore's pool scans every connection it
            # holds each time a request comes or goes (O(n²) in connections at once), which
            # at 128 streams in one pool was most of the client's CPU. A stream sends one
            # request at a time, so its own one-connection pool never holds it back.

            spread = not self.plan.burst_start and streams > 1
            done, count = self.request_ns
            mean = done / count if count else None
            pilot = asyncio.get_running_loop().create_future() if spread and mean is None else None

            async def stream(k: int) -> None:
                # Each request is due when the stream's last one ended; the first, when
                # the level began, or its place in the spread start: stream k of n at
                # k/n of a mean request time, so n streams do not all queue in the
                # client at the first instant. With no request timed yet, stream 0's
                # first request is the pilot that times one, the others spread after it.
                due = start
                async with self._session() as session:
                    if spread and k:
                        if pilot is not None:
                            ended, took = await pilot
                            due = ended + int(took * k / streams)
                        else:
                            due = start + int((mean or 0.0) * k / streams)
                        await sleep_until(due)
                    while level.sending:
                        ended = await self.send(session, level, Step.LOAD, label, due)
                        if pilot is not None and not pilot.done():
                            pilot.set_result((ended, ended - due))
                        due = ended
                if pilot is not None and not pilot.done():
                    # The level stopped before the pilot was sent: nothing to spread.
                    pilot.set_result((now_ns(), 0))

            async with asyncio.TaskGroup() as group:
                for k in range(streams):
                    group.create_task(stream(k))
        except BaseException:
            partial = True
            raise
        finally:
            # A level the error budget stopped did not hold its load either.
            partial = partial or level.too_many_errors
            self._level_done(
                LevelWindow(number, label, None, start, _end(level), partial=partial,
                            client=self.meter.end()),
                level,
            )  # fmt: skip
        return level

    async def open(
        self,
        number: int,
        rate: float,
        seconds: float,
        *,
        level_rate: float | None = None,
        max_in_flight: int | None = None,
    ) -> _Level:
        """Open loop: Poisson arrivals at ``rate``; ``level_rate`` is the level's whole rate
        when this process sends only its share of it (independent Poisson shares add up
        to a Poisson process at the sum of their rates)."""
        seed = None if self.plan.seed is None else self.plan.seed * 1000 + number
        rng = random.Random(_seed(seed, self.worker))
        in_flight = max_in_flight or self.plan.max_in_flight
        schedule: list[float] = []
        at = rng.expovariate(rate)
        while at < seconds:
            schedule.append(at)
            at += rng.expovariate(rate)
        self.meter.start()
        start = now_ns()
        level = _Level(number, start + int(seconds * _NS))
        late_ms: list[float] = []
        sent = 0
        partial = False
        try:
            # ``in_flight`` one-connection sessions, each lent to one arrival at a time:
            # the bound on requests open at once, without one pool scanning them all on
            # every request (see :meth:`closed`).
            async with contextlib.AsyncExitStack() as sessions:
                idle: asyncio.Queue[ProbeSession] = asyncio.Queue()
                for _ in range(in_flight):
                    idle.put_nowait(await sessions.enter_async_context(self._session()))

                async def arrival(session: ProbeSession, due: int) -> None:
                    try:
                        await self.send(session, level, Step.ARRIVALS, number, due)
                    finally:
                        idle.put_nowait(session)

                async with asyncio.TaskGroup() as group:
                    for offset in schedule:
                        due = start + int(offset * _NS)
                        await sleep_until(due)
                        session = await idle.get()
                        if not level.sending:
                            idle.put_nowait(session)
                            break
                        late_ms.append((now_ns() - due) / 1e6)
                        sent += 1
                        group.create_task(arrival(session, due))
        except BaseException:
            partial = True
            raise
        finally:
            partial = partial or level.too_many_errors
            late = sorted(late_ms)[len(late_ms) // 2] if late_ms else None
            window = LevelWindow(
                number,
                None,
                level_rate or rate,
                start,
                _end(level),
                len(schedule),
                late,
                # Reached after the window ended, unless the level was stopped first.
                unsent=0 if partial or level.stop_ns is not None else len(schedule) - sent,
                partial=partial,
                client=self.meter.end(),
            )
            self._level_done(window, level)
        return level

    def _level_done(self, window: LevelWindow, level: _Level) -> None:
        if level.reason is not None:
            self.note(f"level {window.label} stopped early: {level.reason}")
        if window.unsent and not window.partial:
            self.note(
                f"level {window.label}: {window.unsent} of its {window.scheduled} arrivals were "
                "due inside the window but reached only after it ended (the generator ran late "
                "or every connection was busy), and were not sent"
            )
        if window.partial:
            self.note(
                f"level {window.label} was cut short after {window.seconds:.1f} s of "
                f"{(level.deadline_ns - window.start_ns) / _NS:.1f} s: its {level.done} "
                "finished requests are kept, marked partial, and left out of the knee "
                "and the plateau"
            )
        self.on_level(window)

    async def run(self) -> None:
        def blocked() -> str | None:
            return None if self.budget.requests_left >= 1 else "the budget ran out"

        levels = level_schedule(
            self.plan, lambda: self.budget.seconds_left, blocked, self.note, self.on_progress
        )
        for number, value, seconds in levels:
            if self.plan.closed_loop:
                level = await self.closed(number, int(value), seconds)
            else:
                level = await self.open(number, float(value), seconds)
            if level.too_many_errors:
                stopped_for_errors(self.plan, number, self.note)
                return


def level_schedule(
    plan: LoadPlan,
    seconds_left: Callable[[], float],
    blocked: Callable[[], str | None],
    note: Callable[[str], None],
    on_progress: ProgressHook | None,
) -> Iterator[tuple[int, int | float, float]]:
    """Each level of ``plan`` to run, as (number from 1, concurrency or rate, seconds), while
    the time budget lasts and ``blocked`` names no reason to stop; the levels left out, and
    a level the time budget cuts, are said through ``note``."""
    levels: list[int | float] = list(plan.concurrency or plan.rates)
    for number, value in enumerate(levels, start=1):
        if on_progress is not None:
            on_progress("levels", number - 1, len(levels))
        seconds = min(plan.duration_per_level, seconds_left())
        reason = "the budget ran out" if seconds <= 0 else blocked()
        if reason is not None:
            note(f"levels from {value:g} on left out: {reason}")
            return
        if seconds < plan.duration_per_level:
            note(f"level {value:g} cut to {seconds:.1f} s by the time budget")
        yield number, value, seconds
    if on_progress is not None:
        on_progress("levels", len(levels), len(levels))


def stopped_for_errors(plan: LoadPlan, number: int, note: Callable[[str], None]) -> None:
    """Say the sweep ended at level ``number`` for its errors, unless it was the last."""
    if number < len(plan.concurrency or plan.rates):
        note("the sweep stopped there: too many requests failed")


def too_many_failed(done: int, failed: int, max_error_rate: float) -> bool:
    """Whether a level's failed share is past ``max_error_rate``, once it has finished
    enough requests for the share to say so."""
    return done >= MIN_FOR_ERROR_RATE and failed / done > max_error_rate


def _seed(seed: int | None, worker: int | None) -> int | None:
    """Each worker its own random stream: the same prompts and arrival gaps in every
    worker would send the same load in lockstep."""
    if seed is None or worker is None:
        return seed
    return seed * 10_007 + worker + 1


async def sleep_until(due_ns: int) -> None:
    """Return once ``due_ns`` (``perf_counter_ns``) has passed, never before: a loop's
    timer may fire early (uvloop reads its clock once a turn, in milliseconds), and a
    request sent before its time would be measured from a due time that had not come."""
    for _ in range(_EARLY_WAKES):
        wait = due_ns - now_ns()
        if wait <= 0:
            return
        await asyncio.sleep(wait / _NS)


_EARLY_WAKES = 100_000
"""Sleeps :func:`sleep_until` takes at most. uvloop sets a timer in whole milliseconds
from a clock read at the start of its turn, so a sleep may end up to a millisecond
early, and one of under a millisecond ends at the next turn: the last millisecond is
waited a turn at a time (a few hundred). The bound keeps a clock that never advanced
from holding a request for ever."""


def ended_ns(trace: RequestTrace) -> int:
    """When ``trace``'s request ended (``perf_counter_ns``): when a closed stream's next
    request is due. A request that failed before its end ended now."""
    return now_ns() if trace.done_ns is None else trace.t0_ns + trace.done_ns


def _end(level: _Level) -> int:
    return level.stop_ns if level.stop_ns is not None else min(now_ns(), level.deadline_ns)


async def run_load(
    plan: LoadPlan,
    *,
    on_sample: Callable[[Sample], None],
    on_level: LevelHook,
    on_progress: ProgressHook | None = None,
    budget: Budget | None = None,
    on_note: Callable[[StepNote], None] | None = None,
) -> list[StepNote]:
    """Run every level of ``plan`` in turn, within its budget; return what was left out
    (each note also reaches ``on_note`` as it is made, so a cancelled sweep keeps them).

    The time budget bounds the levels' windows; requests still in flight when it
    has run out ``max_seconds`` after the start are abandoned."""
    budget = budget or budget_for(plan)
    sweep = _Sweep(plan, budget, on_sample, on_level, on_progress, on_note)
    await within_time_budget(budget.seconds_left, sweep.run(), sweep.note)
    return sweep.notes


async def within_time_budget(
    seconds: float, sweep: Coroutine[object, object, None], note: Callable[[str], None]
) -> None:
    """Await ``sweep`` for at most ``seconds`` (``inf``: no bound); when they run out, the
    requests in flight are abandoned and ``note`` says so. What the sweep keeps is kept
    out of the collector's full passes meanwhile (:mod:`~latdoc.features.load.send.heap`)."""
    try:
        async with (
            kept_out_of_collection(),
            asyncio.timeout(None if math.isinf(seconds) else seconds),
        ):
            await sweep
    except TimeoutError:
        note("the time budget ran out; the requests in flight were abandoned")
