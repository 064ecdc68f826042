"""Batched commits for busy writers: :class:`SampleWriter`, and
:class:`QueuedWriter` for writers that must never wait for the disk.

A commit is a disk sync, so one commit per sample caps a writer at a few
thousand samples a second. A :class:`SampleWriter` holds the samples it is
given and commits them together once ``max_samples`` are held or the oldest has
waited ``max_delay`` seconds, and on leaving its block (also when the block
raises), so a crash loses at most the samples of the last ``max_delay``.
Diagnoses keep :meth:`Store.add_sample` (each sample committed as it finishes);
batching is for writers that asked for it.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Protocol, Self

from latdoc.records import Sample

DEFAULT_MAX_SAMPLES = 5000
DEFAULT_MAX_DELAY = 0.25
"""Seconds a sample may wait for its commit."""


class _Sink(Protocol):
    def add_samples(self, run_id: str, samples: Sequence[Sample]) -> None: ...


class SampleWriter:
    """Adds samples of one run in batches; use it as a context manager."""

    def __init__(
        self,
        sink: _Sink,
        run_id: str,
        *,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        max_delay: float = DEFAULT_MAX_DELAY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_samples < 1:
            raise ValueError(f"max_samples must be at least 1, got {max_samples}")
        if max_delay < 0:
            raise ValueError(f"max_delay must not be negative, got {max_delay}")
        self.run_id = run_id
        self.max_samples = max_samples
        self.max_delay = max_delay
        self.committed = 0
        self._sink = sink
        self._clock = clock
        self._held: list[Sample] = []
        self._oldest = 0.0

    def add(self, sample: Sample) -> None:
        """Hold ``sample``; commit what is held when the batch is full or old enough."""
        if not self._held:
            self._oldest = self._clock()
        self._held.append(sample)
        if len(self._held) >= self.max_samples or self._clock() - self._oldest >= self.max_delay:
            self.flush()

    def flush(self) -> None:
        """Commit every held sample now."""
        if self._held:
            held, self._held = self._held, []
            self._sink.add_samples(self.run_id, held)
            self.committed += len(held)

    @property
    def pending(self) -> int:
        """Samples held and not yet committed."""
        return len(self._held)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.flush()


QUEUE_LIMIT = 10_000
"""Samples a :class:`QueuedWriter` holds for its thread before it drops new ones."""
QUEUE_BATCH = 256
"""Samples its thread commits at most in one transaction."""
WRITE_ATTEMPTS = 3
"""Times one batch is tried (after 0.5 s, then 1 s) before it is given up as lost."""
FIRST_RETRY_DELAY = 0.5


LostCallback = Callable[[int, str], None]
"""Told ``(count, reason)`` for samples that will never be written."""


class QueuedWriter:
    """Adds samples of one run from a thread of its own, so that the caller never waits
    for the disk: :meth:`put` only appends to a bounded queue.

    The thread writes through its own connection (``connect()``, called on the thread;
    ``after_write(connection)`` runs after each batch it commits),
    commits what has queued up in batches of at most :data:`QUEUE_BATCH`, and tries a
    batch that fails (a locked database, a full disk) :data:`WRITE_ATTEMPTS` times
    before giving it up. Every sample that will not be written, dropped from a full
    queue, given up or still queued when :meth:`close` stops waiting, is told to
    ``on_lost`` with the reason, from whichever thread found it; nothing is raised to
    the caller of :meth:`put`.
    """

    def __init__(
        self,
        connect: Callable[[], _Sink],
        run_id: str,
        on_lost: LostCallback,
        *,
        limit: int = QUEUE_LIMIT,
        close_connection: Callable[[_Sink], None] | None = None,
        after_write: Callable[[_Sink], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.committed = 0
        self._connect = connect
        self._close_connection = close_connection
        self._after_write = after_write
        self._on_lost = on_lost
        self._queue: queue.Queue[Sample | None] = queue.Queue(maxsize=limit)
        self._stopping = threading.Event()
        self._abandoned = False
        self._thread = threading.Thread(target=self._run, name="latdoc-writer", daemon=True)
        self._thread.start()

    def put(self, sample: Sample) -> None:
        """Queue ``sample`` for the thread; never blocks, never raises."""
        try:
            self._queue.put_nowait(sample)
        except queue.Full:
            self._on_lost(1, "the store fell behind and its write queue was full")

    def flush(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for every queued sample to be written (or
        given up); True when none is left."""
        done = self._queue.all_tasks_done
        with done:
            return done.wait_for(lambda: self._queue.unfinished_tasks == 0, timeout)

    def close(self, timeout: float) -> None:
        """Write what is queued, waiting at most ``timeout`` seconds; what is still
        queued then is lost."""
        deadline = time.monotonic() + timeout
        self._stopping.set()
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            self._abandoned = True
            left = sum(1 for _ in iter(self._take, None))
            if left:
                self._on_lost(left, "the store was still busy when the recording closed")

    def _take(self) -> Sample | None:
        """A queued sample, or None when the queue is empty or at its end."""
        try:
            item = self._queue.get_nowait()
        except queue.Empty:
            return None
        self._queue.task_done()
        return item

    def _run(self) -> None:
        try:
            sink = self._connect()
        except Exception as exc:
            self._drain_as_lost(_reason(exc))
            return
        try:
            while not self._abandoned:
                batch, stop = self._next_batch()
                if batch:
                    self._write(sink, batch)
                if stop:
                    return
        finally:
            if self._close_connection is not None:
                with contextlib.suppress(Exception):
                    self._close_connection(sink)

    def _next_batch(self) -> tuple[list[Sample], bool]:
        first = self._queue.get()
        if first is None:
            self._queue.task_done()
            return [], True
        batch = [first]
        while len(batch) < QUEUE_BATCH:
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                break
            if more is None:
                self._queue.task_done()
                return batch, True
            batch.append(more)
        return batch, False

    def _write(self, sink: _Sink, batch: list[Sample]) -> None:
        try:
            self._attempt(sink, batch)
        finally:
            for _ in batch:
                self._queue.task_done()

    def _attempt(self, sink: _Sink, batch: list[Sample]) -> None:
        delay = FIRST_RETRY_DELAY
        for attempt in range(WRITE_ATTEMPTS):
            try:
                sink.add_samples(self.run_id, batch)
            except Exception as exc:
                if attempt == WRITE_ATTEMPTS - 1 or self._abandoned:
                    self._on_lost(len(batch), _reason(exc))
                    return
                if self._stopping.wait(delay):
                    delay = 0.0
                delay *= 2
            else:
                self.committed += len(batch)
                if self._after_write is not None:
                    with contextlib.suppress(Exception):
                        self._after_write(sink)
                return

    def _drain_as_lost(self, reason: str) -> None:
        while self._queue.get() is not None:
            self._queue.task_done()
            self._on_lost(1, reason)
        self._queue.task_done()


def _reason(exc: BaseException) -> str:
    """A failure to write, in one short line (SQLite's own words: "database is locked")."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:160]
