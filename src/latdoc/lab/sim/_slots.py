"""Parallel slots with a first-come-first-served queue, and background load.

:class:`SlotPool` is continuous batching, roughly: ``slots`` requests are served at
once, each at full speed, and the rest wait in arrival order. A waiting request
that is cancelled (its client went away) leaves the queue; a slot handed to a
request that is cancelled at that moment goes to the next in line.

:class:`BackgroundLoad` plays the other users of the server. A "day" of
``day_seconds`` is cut into equal parts, one per value of the load profile. Each slot
has a background user of its own who, in a part of value ``f``, asks for a slot, holds
it for an exponential time of mean ``mean`` and then rests for an exponential time of
mean ``mean·(1 − f)/f``: each user holds a slot a fraction ``f`` of the time (less
only what it waits in the queue behind real requests), so on average a fraction ``f``
of the slots is theirs, with the bursts and lulls of independent users that make
queueing fluctuate, and at ``f = 1`` every slot is always held or asked for. (Poisson
arrivals that give up when a background request already waits fall well short of
``f`` there: at ``f = 1`` of one slot, 25 of 57 requests sent one at a time waited for
it, against 43 of 46 now.) The day starts when the
pool is made, or at a wall-clock ``day_origin``, and repeats; the background runs only
once started (at the first request).
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
        *,
        day_origin: float | None = None,
    ) -> None:
        self.pool = pool
        self.profile = profile
        self.day_seconds = day_seconds
        self.mean_s = mean_ms / 1000
        self.rng = rng
        now = time.monotonic()
        # The day runs on the monotonic clock; a wall-clock origin only sets its phase.
        into_day = 0.0 if day_origin is None else (time.time() - day_origin) % day_seconds
        self.origin = now - into_day
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
        """Start the background on the running loop, once: a user per slot."""
        if self.task is None:
            loop = asyncio.get_running_loop()
            self.task = loop.create_task(self._users())

    def close(self) -> None:
        for task in (self.task, *self.jobs):
            if task is not None:
                task.cancel()
        self.jobs.clear()

    async def _users(self) -> None:
        async with asyncio.TaskGroup() as group:
            for _ in range(self.pool.slots):
                self.jobs.add(group.create_task(self._user()))

    async def _user(self) -> None:
        """Hold a slot, rest, and again: a fraction ``f`` of the time held, where ``f`` is
        the part's; in a part of ``f = 0`` rest to its end. A user starts where its
        alternation would be at random: holding with probability ``f``."""
        fraction = self.fraction_now()
        if self.rng.random() >= fraction:
            await self._rest()
        while True:
            if self.fraction_now() > 0:
                await self._job(self.rng.expovariate(1 / self.mean_s))
            await self._rest()

    async def _rest(self) -> None:
        """Rest an exponential time of mean ``mean·(1 − f)/f``, drawn again when a new
        part starts (its ``f`` may differ)."""
        while True:
            now = time.monotonic()
            fraction, part_end = self.part_at(now)
            if fraction >= 1:
                return
            rest = (
                self.rng.expovariate(fraction / (self.mean_s * (1 - fraction)))
                if fraction > 0
                else math.inf
            )
            if now + rest < part_end:
                await asyncio.sleep(rest)
                return
            await asyncio.sleep(max(part_end - now, 0.0) + 1e-4)
            if self.rng.random() < self.fraction_now():
                return

    async def _job(self, hold_s: float) -> None:
        await self.pool.acquire(background=True)
        try:
            await asyncio.sleep(hold_s)
        finally:
            self.pool.release(background=True)
