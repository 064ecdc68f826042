"""Parallel slots with a first-come-first-served queue, and background load.

:class:`SlotPool` is continuous batching, roughly: ``slots`` requests are served at
once, each at full speed, and the rest wait in arrival order. A waiting request
that is cancelled (its client went away) leaves the queue; a slot handed to a
request that is cancelled at that moment goes to the next in line.

:class:`BackgroundLoad` plays the other users of the server. A "day" of
``day_seconds`` is cut into equal parts, one per value of the load profile; in a
part of value ``f`` background requests arrive as a Poisson process at the rate
``f·slots / mean`` and hold a slot for an exponential time of that mean, so on
average a fraction ``f`` of the slots is theirs, with the bursts and lulls that
make queueing fluctuate. The day starts when the pool is made and repeats; the
background runs only once started (at the first request), beginning with the
slots a part's mean occupancy would hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections import deque
from dataclasses import dataclass

__all__ = ["BackgroundLoad", "SlotPool"]


@dataclass(eq=False, slots=True)
class _Waiter:
    future: asyncio.Future[None]
    background: bool


class SlotPool:
    """``slots`` slots handed out in arrival order."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.busy = 0
        self.background_busy = 0
        self.waiting: deque[_Waiter] = deque()

    @property
    def background_waiting(self) -> int:
        return sum(1 for waiter in self.waiting if waiter.background)

    async def acquire(self, *, background: bool = False) -> bool:
        """Wait for a slot, behind everyone who asked before; say whether it waited."""
        if self.busy < self.slots and not self.waiting:
            self._take(background)
            return False
        waiter = _Waiter(asyncio.get_running_loop().create_future(), background)
        self.waiting.append(waiter)
        try:
            await waiter.future
        except asyncio.CancelledError:
            if waiter.future.done() and not waiter.future.cancelled():
                self.release(background=background)
            else:
                with contextlib.suppress(ValueError):
                    self.waiting.remove(waiter)
            raise
        return True

    def release(self, *, background: bool = False) -> None:
        """Give a slot back; the first in line gets it."""
        if background:
            self.background_busy -= 1
        self.busy -= 1
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.future.done():
                self._take(waiter.background)
                waiter.future.set_result(None)
                return

    def _take(self, background: bool) -> None:
        self.busy += 1
        if background:
            self.background_busy += 1


class BackgroundLoad:
    """Simulated background requests that follow a daily load profile."""

    def __init__(
        self,
        pool: SlotPool,
        profile: tuple[float, ...],
        day_seconds: float,
        mean_ms: float,
        rng: random.Random,
    ) -> None:
        self.pool = pool
        self.profile = profile
        self.day_seconds = day_seconds
        self.mean_s = mean_ms / 1000
        self.rng = rng
        self.origin = time.monotonic()
        self.task: asyncio.Task[None] | None = None
        self.jobs: set[asyncio.Task[None]] = set()

    def part_at(self, now: float) -> tuple[float, float]:
        """The profile's value at monotonic time ``now`` and when that part ends."""
        part_s = self.day_seconds / len(self.profile)
        index = math.floor((now - self.origin) / part_s)
        return self.profile[index % len(self.profile)], self.origin + (index + 1) * part_s

    def fraction_now(self) -> float:
        """The load profile's value now: the mean fraction of slots background takes."""
        return self.part_at(time.monotonic())[0]

    def start(self) -> None:
        """Start the background on the running loop, once."""
        if self.task is None:
            fraction = self.fraction_now()
            for _ in range(round(fraction * self.pool.slots)):
                self._spawn()
            self.task = asyncio.get_running_loop().create_task(self._arrivals())

    def close(self) -> None:
        for task in (self.task, *self.jobs):
            if task is not None:
                task.cancel()
        self.jobs.clear()

    async def _arrivals(self) -> None:
        while True:
            now = time.monotonic()
            fraction, part_end = self.part_at(now)
            rate = fraction * self.pool.slots / self.mean_s
            wait = self.rng.expovariate(rate) if rate > 0 else math.inf
            if now + wait >= part_end:
                await asyncio.sleep(max(part_end - now, 0.0) + 1e-4)
                continue
            await asyncio.sleep(wait)
            if self.pool.background_waiting < self.pool.slots:
                self._spawn()

    def _spawn(self) -> None:
        task = asyncio.get_running_loop().create_task(
            self._job(self.rng.expovariate(1 / self.mean_s))
        )
        self.jobs.add(task)
        task.add_done_callback(self.jobs.discard)

    async def _job(self, hold_s: float) -> None:
        await self.pool.acquire(background=True)
        try:
            await asyncio.sleep(hold_s)
        finally:
            self.pool.release(background=True)
