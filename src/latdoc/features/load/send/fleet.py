"""A load sent from many workers: levels split, clocks aligned, traces merged into one run.

The driver (this module) owns the sweep; workers
(:class:`~latdoc.features.load.send.workers.LoadWorker`, in local processes or Ray
actors, see :mod:`.processes` and :mod:`.ray`) only send. For each level the driver
splits the concurrency (or the arrival rate and the cap on requests in flight) between
the workers still alive, tells each when to start on its own clock, and keeps every
batch of samples as it arrives, on its own clocks and numbered in arrival order,
labelled with the worker that sent it. The level's window is the union of the workers'
windows.

**Clocks.** A worker's ``perf_counter_ns`` and ``time_ns`` are not the driver's
on another host. The offset of each is estimated NTP-style over
:data:`CLOCK_ROUNDS` round trips: ``worker clock − (sent + received) / 2``, the
round trip with the smallest time kept; its uncertainty is half that round
trip. On the driver's own boot (same host, same ``boot_id``) the monotonic clock
is one clock, so the offset applied is exactly 0 and the estimate is only
recorded.

**Loss.** A worker reports in each batch how many requests it has started. When
it dies, the driver counts what it started and never sent back as lost in
flight, says so in a note, and goes on with the workers left.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from types import TracebackType
from typing import Any, Protocol, Self

from latdoc.errors import LatdocError, message_of
from latdoc.features.load.analysis import LevelWindow, busiest
from latdoc.features.load.send.sweep import (
    LoadPlan,
    level_schedule,
    stopped_for_errors,
    too_many_failed,
    within_time_budget,
)
from latdoc.features.load.send.workers import Batch, LevelOrder, split, worker_clocks, worker_host
from latdoc.i18n import Message
from latdoc.probe import now_ns
from latdoc.records import Sample, Step, StepNote

CLOCK_ROUNDS = 8
"""Round trips per worker to estimate its clock offset; the fastest is kept."""
START_TIMEOUT_S = 120.0
"""How long the workers may take to start (a Ray cluster may have to find CPUs)."""
START_LEAD_NS = 100_000_000
"""How far ahead of now a level's start is set, so every worker hears of it in time."""
_NS = 1_000_000_000


class WorkerLost(Exception):
    """A worker stopped answering: its process exited or its actor died."""


class WorkerHandle(Protocol):
    """The driver's side of one worker, whatever runs it."""

    worker: int

    async def clock(self) -> tuple[int, int]: ...

    async def where(self) -> dict[str, Any]: ...

    def run_level(self, order: LevelOrder) -> AsyncIterator[Batch]: ...


class Fleet:
    """The workers of one sweep, whatever runs them (:class:`~.processes.ProcessFleet`,
    :class:`~.ray.RayFleet`); a context manager whose exit stops every one of them."""

    backend: str
    """What the run's ``meta["workers"]`` calls it."""
    kind: str
    """What the run's notes call its workers."""
    handles: Sequence[WorkerHandle]

    def close(self) -> None:
        """Stop every worker started so far."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _closed_on_error(self) -> Iterator[None]:
        """Around the starting: a fleet that fails to start stops what it started."""
        try:
            yield
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True)
class ClockOffset:
    """A worker's clocks minus the driver's, as estimated and as applied."""

    monotonic_ns: int
    wall_ns: int
    uncertainty_ns: int
    """Half the round trip of the estimate kept: the true offset is within this."""
    applied_monotonic_ns: int
    applied_wall_ns: int

    def to_driver(self, sample: Sample) -> Sample:
        """``sample`` with its trace's start moved onto the driver's clocks."""
        if not self.applied_monotonic_ns and not self.applied_wall_ns:
            # A worker on the driver's own boot: its clocks are the driver's.
            return sample
        t = sample.trace
        wall = self.applied_wall_ns
        trace = replace(
            t,
            t0_ns=t.t0_ns - self.applied_monotonic_ns,
            started_ns=None if t.started_ns is None else t.started_ns - wall,
            started_at=t.started_at - timedelta(microseconds=wall / 1000),
        )
        return replace(sample, trace=trace)

    def window(self, w: LevelWindow) -> LevelWindow:
        shift = self.applied_monotonic_ns
        return replace(w, start_ns=w.start_ns - shift, end_ns=w.end_ns - shift)

    def meta(self) -> dict[str, Any]:
        return {
            "monotonic_ns": self.monotonic_ns,
            "wall_ns": self.wall_ns,
            "uncertainty_ns": self.uncertainty_ns,
            "applied_monotonic_ns": self.applied_monotonic_ns,
            "applied_wall_ns": self.applied_wall_ns,
        }


async def estimate_offset(
    handle: WorkerHandle, *, same_clock: bool, rounds: int = CLOCK_ROUNDS
) -> ClockOffset:
    """The worker's clock offsets from the fastest of ``rounds`` round trips."""
    best: tuple[int, int, int] | None = None
    for _ in range(rounds):
        mono_before, wall_before = worker_clocks()
        worker_mono, worker_wall = await handle.clock()
        mono_after, wall_after = worker_clocks()
        rtt = mono_after - mono_before
        if best is None or rtt < best[0]:
            best = (
                rtt,
                worker_mono - (mono_before + mono_after) // 2,
                worker_wall - (wall_before + wall_after) // 2,
            )
    assert best is not None
    rtt, mono, wall = best
    return ClockOffset(
        mono, wall, (rtt + 1) // 2, 0 if same_clock else mono, 0 if same_clock else wall
    )


@dataclass
class Member:
    """One worker as the driver sees it."""

    handle: WorkerHandle
    where: dict[str, Any]
    offset: ClockOffset
    started: int = 0
    received: int = 0
    alive: bool = True

    def meta(self) -> dict[str, Any]:
        return {
            "worker": self.handle.worker,
            **{k: v for k, v in self.where.items() if k != "boot_id"},
            "clock_offset": self.offset.meta(),
        }


async def join(handles: Sequence[WorkerHandle]) -> list[Member]:
    """Learn where each worker runs and estimate its clock offsets."""
    mine = worker_host()

    async def one(handle: WorkerHandle) -> Member:
        try:
            where = await handle.where()
            same = bool(where.get("boot_id")) and where.get("boot_id") == mine.get("boot_id")
            return Member(handle, where, await estimate_offset(handle, same_clock=same))
        except WorkerLost as exc:
            raise LatdocError(
                Message(
                    "load worker {worker} did not start: {exc}",
                    worker=handle.worker,
                    exc=message_of(exc),
                )
            ) from None

    try:
        async with asyncio.timeout(START_TIMEOUT_S):
            return list(await asyncio.gather(*(one(h) for h in handles)))
    except TimeoutError:
        raise LatdocError(
            Message(
                "the {workers} load workers did not all start within {timeout:g} s (on "
                "Ray: does the cluster have a free CPU for each?)",
                workers=len(handles),
                timeout=START_TIMEOUT_S,
            )
        ) from None


@dataclass
class _LevelCount:
    done: int = 0
    failed: int = 0
    windows: list[LevelWindow] = field(default_factory=list)
    too_many_errors: bool = False


class FleetSweep:
    """The driver's sweep: each level split over the live workers, run, merged."""

    def __init__(
        self,
        plan: LoadPlan,
        members: Sequence[Member],
        on_sample: Callable[[Sample], None],
        on_level: Callable[[LevelWindow], None],
        on_progress: Callable[[str, int, int], None] | None,
        on_note: Callable[[StepNote], None] | None = None,
        *,
        kind: str = "workers",
    ) -> None:
        self.plan = plan
        self.members = list(members)
        self.on_note = on_note
        self.on_sample = on_sample
        self.on_level = on_level
        self.on_progress = on_progress
        self.notes: list[StepNote] = []
        self.index = 0
        self.started_ns = now_ns()
        self.note(sent_from(self.members, kind))

    def note(self, text: str) -> None:
        note = StepNote(Step.RUN, text)
        self.notes.append(note)
        if self.on_note is not None:
            self.on_note(note)

    async def run(self) -> list[StepNote]:
        await within_time_budget(self.plan.max_seconds, self._levels(), self.note)
        return self.notes

    async def _levels(self) -> None:
        plan = self.plan

        def seconds_left() -> float:
            return plan.max_seconds - (now_ns() - self.started_ns) / _NS

        def blocked() -> str | None:
            if sum(m.started for m in self.members) >= plan.max_requests:
                return "the budget ran out"
            return None if any(m.alive for m in self.members) else "every worker was lost"

        levels = level_schedule(plan, seconds_left, blocked, self.note, self.on_progress)
        for number, value, seconds in levels:
            live = [m for m in self.members if m.alive]
            count = await self._level(number, value, seconds, live)
            if count.too_many_errors or too_many_failed(
                count.done, count.failed, plan.max_error_rate
            ):
                stopped_for_errors(plan, number, self.note)
                return

    async def _level(
        self, number: int, value: int | float, seconds: float, live: Sequence[Member]
    ) -> _LevelCount:
        plan = self.plan
        closed = plan.closed_loop
        streams = split(int(value), len(live)) if closed else [0] * len(live)
        in_flight = split(max(plan.max_in_flight, len(live)), len(live))
        # At least three round trips to the slowest worker.
        lead = max([START_LEAD_NS] + [6 * m.offset.uncertainty_ns for m in live])
        start = now_ns() + lead
        count = _LevelCount()
        orders = [
            (
                m,
                LevelOrder(
                    number=number,
                    concurrency=int(value) if closed else None,
                    rate=None if closed else float(value),
                    streams=streams[i],
                    share_rate=None if closed else float(value) / len(live),
                    max_in_flight=in_flight[i],
                    seconds=seconds,
                    start_ns=start + m.offset.monotonic_ns,
                ),
            )
            for i, m in enumerate(live)
            if not closed or streams[i] > 0
        ]
        partial = False
        try:
            await asyncio.gather(*(self._consume(m, order, count) for m, order in orders))
        except BaseException:
            partial = True
            raise
        finally:
            # A level cut short, or one a worker was lost in, did not hold its load.
            lost = any(not m.alive for m, _ in orders)
            self.on_level(self._window(number, value, start, count, partial=partial or lost))
        return count

    async def _consume(self, member: Member, order: LevelOrder, count: _LevelCount) -> None:
        try:
            async for batch in member.handle.run_level(order):
                for sample in batch.samples:
                    self._keep(member, sample, count)
                member.started = batch.started
                if batch.window is not None:
                    count.windows.append(member.offset.window(batch.window))
                    count.too_many_errors |= batch.too_many_errors
                    for n in batch.notes:
                        self.note(f"worker {member.handle.worker}: {n.text}")
                    return
        except WorkerLost as exc:
            member.alive = False
            lost = member.started - member.received
            label = f"{order.concurrency}" if order.rate is None else f"{order.rate:g}/s"
            self.note(
                f"worker {member.handle.worker} ({_place(member.where)}) was lost during "
                f"level {label}: {exc}; {lost} requests it had started were lost in "
                "flight, never measured"
            )

    def _keep(self, member: Member, sample: Sample, count: _LevelCount) -> None:
        merged = replace(member.offset.to_driver(sample), index=self.index)
        self.index += 1
        member.received += 1
        count.done += 1
        count.failed += 0 if sample.trace.ok else 1
        self.on_sample(merged)

    def _window(
        self, number: int, value: int | float, start: int, count: _LevelCount, *, partial: bool
    ) -> LevelWindow:
        closed = self.plan.closed_loop
        ws = count.windows
        scheduled = [w.scheduled for w in ws if w.scheduled is not None]
        late = [w.late_ms_p50 for w in ws if w.late_ms_p50 is not None]
        return LevelWindow(
            number=number,
            concurrency=int(value) if closed else None,
            rate=None if closed else float(value),
            start_ns=min((w.start_ns for w in ws), default=start),
            end_ns=max((w.end_ns for w in ws), default=max(start, now_ns())),
            scheduled=sum(scheduled) if scheduled else None,
            # The workers' medians, the latest of them: an upper bound of the whole median.
            late_ms_p50=max(late) if late else None,
            unsent=sum(w.unsent for w in ws),
            partial=partial or any(w.partial for w in ws),
            client=busiest((w.client for w in ws), len(self.members)),
        )


def sent_from(members: Sequence[Member], kind: str) -> str:
    """Where the streams left from, and how well the workers' clocks are known."""
    hosts = sorted({str(m.where.get("host")) for m in members})
    worst_us = max((m.offset.uncertainty_ns for m in members), default=0) / 1000
    applied = any(m.offset.applied_monotonic_ns or m.offset.applied_wall_ns for m in members)
    how = (
        "their traces were moved onto this machine's clocks"
        if applied
        else "they share this machine's clock, so no offset was applied"
    )
    return (
        f"sent from {len(members)} {kind} on {', '.join(hosts)}; their clock offsets were "
        f"estimated to ±{worst_us:.0f} µs (the fastest of {CLOCK_ROUNDS} round trips each) "
        f"and {how}"
    )


def _place(where: dict[str, Any]) -> str:
    return f"pid {where.get('pid')} on {where.get('host')}"
