"""One load worker: its share of each level, sent from a process of its own.

A sweep too heavy for one process is split over workers, local processes
(``latdoc load --processes N``) or Ray actors (``--ray``). Each worker is a
:class:`LoadWorker`: the same sweep loop as a local ``load`` (:mod:`.sweep`), with
its own event loop, connections, random stream and share of the budgets. The
driver sends it one :class:`LevelOrder` per level; the worker sends that level's
requests and streams back :class:`Batch` es of finished samples every
:data:`FLUSH_S` seconds, each with the count of requests it has started, so the
driver knows what a worker that dies had in flight. The level's last batch holds
the level as the worker ran it, on the worker's own clocks; the driver moves it
and the traces onto its clocks.

:class:`LoadWorker` is used as it is as a Ray actor; :func:`serve_pipe` runs it
in a local process behind a pipe. This module imports no Ray.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from latdoc.errors import UsageError
from latdoc.features.load.analysis import LevelWindow
from latdoc.features.load.send.sweep import LoadPlan, _Level, _Sweep, sleep_until
from latdoc.i18n import N_, Message
from latdoc.probe import now_ns, run_sending
from latdoc.records import Sample, StepNote
from latdoc.workload import budget_for

FLUSH_S = 0.05
"""How often a worker sends what it has finished (and started) back to the driver."""
_NS = 1_000_000_000


@dataclass(frozen=True)
class LevelOrder:
    """One level for one worker: its share, and when to start on its own clock."""

    number: int
    concurrency: int | None
    """Closed loop: the level's whole concurrency (its samples are labelled with it)."""
    rate: float | None
    """Open loop: the level's whole arrival rate."""
    streams: int
    """Closed loop: this worker's streams."""
    share_rate: float | None
    """Open loop: this worker's arrival rate."""
    max_in_flight: int
    """Open loop: this worker's cap on requests open at once."""
    seconds: float
    start_ns: int
    """When to start, on this worker's ``perf_counter_ns`` clock."""


@dataclass(frozen=True)
class Batch:
    """What a worker finished since its last batch."""

    worker: int
    samples: tuple[Sample, ...]
    started: int
    """Requests this worker has started over the whole run, finished or not."""
    window: LevelWindow | None = None
    """Set on a level's last batch only: the level as this worker ran it."""
    notes: tuple[StepNote, ...] = ()
    too_many_errors: bool = False


def split(total: int, workers: int) -> list[int]:
    """``total`` as ``workers`` whole shares that differ by at most one, largest first."""
    base, extra = divmod(total, workers)
    return [base + (1 if i < extra else 0) for i in range(workers)]


def worker_plans(plan: LoadPlan, workers: int) -> list[LoadPlan]:
    """Each worker's plan: the request, token and money budgets split between them."""
    if workers < 1:
        raise UsageError(N_("a load needs at least 1 worker"))
    if plan.max_requests < workers:
        raise UsageError(
            Message(
                "--max-requests {max_requests} cannot be split over {workers} workers",
                max_requests=plan.max_requests,
                workers=workers,
            )
        )
    if plan.token_budget is not None and plan.token_budget < workers:
        raise UsageError(
            Message(
                "--token-budget {token_budget} cannot be split over {workers}",
                token_budget=plan.token_budget,
                workers=workers,
            )
        )
    requests = split(plan.max_requests, workers)
    tokens = split(plan.token_budget, workers) if plan.token_budget is not None else None
    money = None if plan.max_cost is None else plan.max_cost / workers
    return [
        replace(
            plan,
            max_requests=requests[i],
            token_budget=None if tokens is None else tokens[i],
            max_cost=money,
        )
        for i in range(workers)
    ]


def worker_clocks() -> tuple[int, int]:
    """This process's monotonic (``perf_counter_ns``) and wall (``time_ns``) clocks, now."""
    return now_ns(), time.time_ns()


def worker_host() -> dict[str, Any]:
    """This process, its host and the host's boot (two processes on one boot share one
    monotonic clock)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        boot = None
    return {"pid": os.getpid(), "host": socket.gethostname(), "boot_id": boot}


class LoadWorker:
    """A share of a load sweep, sent from this process; the driver calls its methods."""

    def __init__(self, plan: LoadPlan, worker: int) -> None:
        self.worker = worker
        self._pending: list[Sample] = []
        self._window: LevelWindow | None = None
        budget = budget_for(plan)
        self._sweep = _Sweep(
            plan, budget, self._pending.append, self._keep_window, None, None, worker=worker
        )

    def _keep_window(self, window: LevelWindow) -> None:
        self._window = window

    async def clock(self) -> tuple[int, int]:
        """This process's monotonic (``perf_counter_ns``) and wall (``time_ns``) clocks."""
        return worker_clocks()

    async def where(self) -> dict[str, Any]:
        """Where this worker runs: its process and host."""
        return worker_host()

    async def run_level(self, order: LevelOrder) -> AsyncIterator[Batch]:
        """Send this worker's share of one level; yield batches until its last one."""
        await sleep_until(order.start_ns)
        self._window = None
        notes_seen = len(self._sweep.notes)
        sent = self._sweep.started
        level = asyncio.create_task(self._level(order))
        try:
            while not level.done():
                await asyncio.wait({level}, timeout=FLUSH_S)
                if self._pending or self._sweep.started != sent:
                    sent = self._sweep.started
                    yield self._batch()
            result = level.result()
        finally:
            if not level.done():
                level.cancel()
                await asyncio.gather(level, return_exceptions=True)
        yield replace(
            self._batch(),
            window=self._window,
            notes=tuple(self._sweep.notes[notes_seen:]),
            too_many_errors=result.too_many_errors,
        )

    def _batch(self) -> Batch:
        samples = tuple(self._pending)
        self._pending.clear()
        return Batch(self.worker, samples, self._sweep.started)

    async def _level(self, order: LevelOrder) -> _Level:
        if order.share_rate is not None:
            return await self._sweep.open(
                order.number,
                order.share_rate,
                order.seconds,
                level_rate=order.rate,
                max_in_flight=order.max_in_flight,
            )
        return await self._sweep.closed(
            order.number, order.streams, order.seconds, level_streams=order.concurrency
        )


def serve_pipe(conn: Connection, plan: LoadPlan, worker: int) -> None:
    """A local worker process: answer the driver's messages on ``conn`` until it closes.

    Messages are ``("clock",)``, ``("where",)`` and ``("level", LevelOrder)``; a
    level is answered with its batches, the last one carrying its window. Ctrl-C
    reaches the driver, which stops this process; the process ignores it itself.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    loader = LoadWorker(plan, worker)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] == "clock":
            conn.send(worker_clocks())
        elif message[0] == "where":
            conn.send(worker_host())
        elif message[0] == "level":
            run_sending(_pump(loader, message[1], conn))
        else:
            return


async def _pump(loader: LoadWorker, order: LevelOrder, conn: Connection) -> None:
    async for batch in loader.run_level(order):
        conn.send(batch)
