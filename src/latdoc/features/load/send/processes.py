"""Load workers as local processes (``latdoc load --processes N``), for when one core
cannot keep up with the streams.

Each worker is a fresh interpreter (multiprocessing's ``spawn``: no state of the
driver's event loop or connections is inherited) that runs
:func:`~latdoc.features.load.send.workers.serve_pipe` behind a pipe. The driver reads the pipe
from its event loop (``add_reader``, no thread, so an interrupted loop never waits
on a blocked read); a pipe that closes is a worker that died.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
from collections.abc import AsyncIterator, Sequence
from multiprocessing.process import BaseProcess
from typing import Any

from latdoc.features.load.send.fleet import Fleet, WorkerLost
from latdoc.features.load.send.sweep import LoadPlan
from latdoc.features.load.send.workers import Batch, LevelOrder, serve_pipe

STOP_WAIT_S = 2.0
"""How long a worker may take to exit when asked, before it is killed."""


class ProcessWorker:
    """The driver's end of one worker process."""

    def __init__(self, plan: LoadPlan, worker: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.worker = worker
        self._conn, child = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=serve_pipe,
            args=(child, plan, worker),
            name=f"latdoc-load-worker-{worker}",
            daemon=True,
        )
        self.process.start()
        # Only the child holds its end now: when it dies, reads here see the end of file.
        child.close()

    async def clock(self) -> tuple[int, int]:
        self._send(("clock",))
        value: tuple[int, int] = await self._recv()
        return value

    async def where(self) -> dict[str, Any]:
        self._send(("where",))
        value: dict[str, Any] = await self._recv()
        return value

    async def run_level(self, order: LevelOrder) -> AsyncIterator[Batch]:
        self._send(("level", order))
        while True:
            batch: Batch = await self._recv()
            yield batch
            if batch.window is not None:
                return

    def ask_to_stop(self) -> None:
        with contextlib.suppress(WorkerLost):
            self._send(("stop",))

    def stop(self) -> None:
        """Wait for the process to exit, and end it by its own id if it does not."""
        self.process.join(STOP_WAIT_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(STOP_WAIT_S)
        self._conn.close()

    def _send(self, message: tuple[Any, ...]) -> None:
        try:
            self._conn.send(message)
        except (OSError, ValueError):
            raise self._lost() from None

    async def _recv(self) -> Any:
        conn = self._conn
        loop = asyncio.get_running_loop()
        try:
            while not conn.poll():
                ready = loop.create_future()
                loop.add_reader(conn.fileno(), _set, ready)
                try:
                    await ready
                finally:
                    loop.remove_reader(conn.fileno())
            # uvloop's add_reader leaves the descriptor non-blocking; the pipe's reader
            # reads a message whole, a large one across several reads, and would fail
            # with EAGAIN halfway through one the worker is still writing.
            os.set_blocking(conn.fileno(), True)
            return conn.recv()
        except (EOFError, OSError):
            raise self._lost() from None

    def _lost(self) -> WorkerLost:
        self.process.join(0.5)
        code = self.process.exitcode
        how = "is gone" if code is None else f"exited with code {code}"
        return WorkerLost(f"its process {how}")


def _set(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class ProcessFleet(Fleet):
    """A worker process per plan, each sending its share of the sweep."""

    backend = "processes"
    kind = "worker processes"

    def __init__(self, plans: Sequence[LoadPlan]) -> None:
        self.handles: list[ProcessWorker] = []
        with self._closed_on_error():
            for i, plan in enumerate(plans):
                self.handles.append(ProcessWorker(plan, i))

    def close(self) -> None:
        for handle in self.handles:
            handle.ask_to_stop()
        for handle in self.handles:
            handle.stop()
