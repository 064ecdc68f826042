"""A thread that reads the probe's sockets as data arrives, so each read keeps its own stamp.

The kernel stamps each segment as it arrives, but keeps the stamp only while the
segment waits alone: a segment that finds the previous one still unread is merged
into it, and the merged data carries the later stamp. A busy event loop reads
late, so chunks that came 20 ms apart would look simultaneous. This thread waits
on every watched socket (``epoll``) and reads it (``recvmsg``, with the kernel's
stamp) as soon as it is readable, queueing each read in the socket's
:class:`Inbox`; the event loop takes the reads in order, each with its own stamp,
whenever it gets round to them. Written by hand: no library reads sockets with
their receive stamps.

One thread serves every socket of the process, started on first use (again in a
forked child); it blocks in ``epoll`` (without the interpreter lock) while nothing
arrives.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import select
import socket
import struct
import threading
import time
import weakref
from typing import NamedTuple

__all__ = [
    "READER_LAG",
    "READ_SIZE",
    "SO_TIMESTAMPNS",
    "Arrival",
    "Inbox",
    "ReaderLag",
    "RealtimeToMonotonic",
    "watch",
]

SO_TIMESTAMPNS = 35
"""Linux ``SO_TIMESTAMPNS`` (also ``SCM_TIMESTAMPNS``), absent from the socket module."""
READ_SIZE = 65536
"""The most one read of the thread takes from a socket."""
PAUSE_BYTES = 4 * 1024 * 1024
"""Reads queued for a socket beyond which the thread stops reading it until the loop
catches up: memory stays bounded when the loop falls far behind."""
_TIMESPEC = struct.Struct("qq")
_ANCILLARY_SPACE = socket.CMSG_SPACE(_TIMESPEC.size) if hasattr(socket, "CMSG_SPACE") else 0
_CALIBRATION_READS = 7
_RECALIBRATE_NS = 1_000_000_000
_EVENTS = getattr(select, "EPOLLIN", 1) | getattr(select, "EPOLLRDHUP", 0x2000)


class RealtimeToMonotonic:
    """Converts ``CLOCK_REALTIME`` nanoseconds to ``perf_counter_ns``.

    The offset between the two clocks is read as the closest of several
    (monotonic, realtime, monotonic) triples: the realtime read sits between two
    monotonic ones, and the narrowest pair bounds its error by half their gap (a
    few hundred nanoseconds). Read again after a second, so a stepped wall clock
    is followed.
    """

    def __init__(self) -> None:
        self._offset = 0
        self._read_at: int | None = None

    def calibrate(self) -> None:
        best_gap: int | None = None
        offset = 0
        for _ in range(_CALIBRATION_READS):
            before = time.perf_counter_ns()
            real = time.clock_gettime_ns(time.CLOCK_REALTIME)
            after = time.perf_counter_ns()
            if best_gap is None or after - before < best_gap:
                best_gap = after - before
                offset = real - (before + after) // 2
        self._offset = offset
        self._read_at = time.perf_counter_ns()

    def __call__(self, realtime_ns: int, now: int) -> int:
        """``realtime_ns`` on the monotonic clock, no later than ``now``."""
        if self._read_at is None or now - self._read_at > _RECALIBRATE_NS:
            self.calibrate()
        return min(realtime_ns - self._offset, now)


_to_monotonic = RealtimeToMonotonic()

LAGS_KEPT = 1_000_000
"""Reader lags held between two :meth:`ReaderLag.take` calls, at most (8 MB)."""


class ReaderLag:
    """How late the reader thread read each stamped segment: the moment its read
    returned less the kernel's stamp. A lag past a token's gap is a stamp lost (the
    next segment merged into the unread one); the load reads it per level, to say
    when the client, not the server, shaped its numbers."""

    def __init__(self) -> None:
        self._lags: list[int] = []

    def record(self, lag_ns: int) -> None:
        lags = self._lags
        if len(lags) < LAGS_KEPT:
            lags.append(lag_ns)

    def take(self) -> list[int]:
        """The lags (ns) recorded since the last take."""
        taken, self._lags = self._lags, []
        return taken


READER_LAG = ReaderLag()


def _kernel_stamp(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            seconds, nanos = _TIMESPEC.unpack_from(data)
            return int(seconds) * 1_000_000_000 + int(nanos)
    return None


class Arrival(NamedTuple):
    """One read: its bytes (empty at the end of the stream), when the kernel received
    them (``perf_counter_ns``; ``None`` without kernel stamps) or the error it met. A
    named tuple: the reader thread makes one per read, holding the interpreter lock."""

    data: bytes
    stamp_ns: int | None
    error: OSError | None = None


class Inbox:
    """The reads of one socket, queued by the reader thread for its event loop."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self.sock = sock
        self.loop = loop
        self.fd = sock.fileno()
        self.reads: collections.deque[Arrival] = collections.deque()
        self.ended = False
        """The end of the stream or an error is queued: nothing more will come."""
        self._waiter: asyncio.Future[None] | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._queued_bytes = 0
        self._paused = False
        self._deadline: float | None = None
        """When the current wait gives up (the loop's clock); ``None`` while none waits."""
        self._timer: asyncio.TimerHandle | None = None

    async def wait(self, timeout: float | None = None) -> None:
        """Until a read is queued; ``TimeoutError`` when none is within ``timeout`` s.

        The deadline is kept by one lazy timer per socket, not a timer per wait: each
        wait moves the deadline, and the timer, when it fires early, is set again for
        it. A timer made and cancelled for every read was an eighth of what a streamed
        request cost a busy loop."""
        if self.reads:
            return
        if timeout is not None:
            loop = self.loop
            deadline = self._deadline = loop.time() + timeout
            timer = self._timer
            if timer is None or timer.when() > deadline:
                if timer is not None:
                    timer.cancel()
                self._timer = loop.call_at(deadline, self._expire)
        try:
            while not self.reads:
                waiter = self.loop.create_future()
                self._waiter = waiter
                try:
                    if not self.reads:  # a read queued before the waiter was set
                        await waiter
                finally:
                    self._waiter = None
        finally:
            self._deadline = None

    def _expire(self) -> None:
        """The lazy timer: fail a wait past its deadline, else wait for the deadline."""
        self._timer = None
        deadline = self._deadline
        if deadline is None or self._closed:
            return
        if self.loop.time() < deadline:
            self._timer = self.loop.call_at(deadline, self._expire)
            return
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(TimeoutError())

    def pop(self) -> Arrival:
        """The next read, which must be queued."""
        arrival = self.reads.popleft()
        self._queued_bytes -= len(arrival.data)
        if self._paused and self._queued_bytes < PAUSE_BYTES // 2:
            with self._lock:
                if self._paused and not self._closed:
                    self._paused = False
                    _reader().resume(self)
        return arrival

    def close(self) -> None:
        """Stop watching and close the socket; the thread never reads it again."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            _reader().forget(self)
            self.sock.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- in the reader thread -------------------------------------------------

    def pull(self) -> asyncio.Future[None] | None:
        """Read the socket once; the loop's waiter to wake, if it waits."""
        with self._lock:
            if self._closed or self.ended:
                return None
            try:
                data, ancillary, _flags, _addr = self.sock.recvmsg(READ_SIZE, _ANCILLARY_SPACE)
            except (BlockingIOError, InterruptedError):
                return None
            except OSError as exc:
                arrival = Arrival(b"", None, exc)
            else:
                now = time.perf_counter_ns()
                stamp = _kernel_stamp(ancillary)
                if stamp is not None:
                    stamp = _to_monotonic(stamp, now)
                    READER_LAG.record(now - stamp)
                arrival = Arrival(data, stamp)
            if not arrival.data:
                self.ended = True
                _reader().forget(self)
            self.reads.append(arrival)
            self._queued_bytes += len(arrival.data)
            if self._queued_bytes > PAUSE_BYTES and not self.ended:
                self._paused = True
                _reader().pause(self)
        return self._waiter


class _Waker:
    """Wakes one event loop's waiters from the reader thread with one thread-safe call
    at a time: while a call is queued and the loop has not run it, waiters found later
    join it instead of writing to the loop's self-pipe again. A write, the loop's wake-up
    and its read of the pipe for every segment were most of the syscalls of a level at
    hundreds of streams, and a busy loop runs behind the reader."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)
        """Held weakly, as the reader's table of wakers holds its loops."""
        self._pending: list[asyncio.Future[None]] = []
        self._lock = threading.Lock()

    def add(self, waiters: list[asyncio.Future[None]]) -> None:
        """In the reader thread: wake ``waiters`` at the loop's next turn."""
        with self._lock:
            queued = bool(self._pending)
            self._pending.extend(waiters)
        loop = self._loop()
        if not queued and loop is not None:
            try:
                loop.call_soon_threadsafe(self._run)
            except RuntimeError:  # a closed loop: nobody waits now
                with self._lock:
                    self._pending.clear()

    def _run(self) -> None:
        with self._lock:
            waiters, self._pending = self._pending, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


class _Reader:
    """The one thread that waits on every watched socket."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._epoll = select.epoll()
        self._inboxes: weakref.WeakValueDictionary[int, Inbox] = weakref.WeakValueDictionary()
        """Held weakly: a stream dropped without being closed takes its inbox and socket
        with it (closing the socket takes it out of the epoll set), as asyncio's own
        transports are collected."""
        self._wakers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Waker] = (
            weakref.WeakKeyDictionary()
        )
        """Each loop's waker, dropped with its loop."""
        self._thread = threading.Thread(target=self._run, name="latdoc-arrivals", daemon=True)
        self._thread.start()

    def watch(self, inbox: Inbox) -> None:
        self._inboxes[inbox.fd] = inbox
        self._epoll.register(inbox.fd, _EVENTS)

    def forget(self, inbox: Inbox) -> None:
        if self._inboxes.get(inbox.fd) is inbox:
            self._inboxes.pop(inbox.fd, None)
            with contextlib.suppress(OSError, ValueError):
                self._epoll.unregister(inbox.fd)

    def pause(self, inbox: Inbox) -> None:
        self._epoll.modify(inbox.fd, 0)

    def resume(self, inbox: Inbox) -> None:
        self._epoll.modify(inbox.fd, _EVENTS)

    def _run(self) -> None:
        while True:
            try:
                events = self._epoll.poll()
            except InterruptedError:
                continue
            # One wake-up of each loop for all its reads of the batch: a thread-safe call
            # writes to the loop's self-pipe, and one a read was most of the loop's work
            # at hundreds of streams.
            waking: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
            for fd, _mask in events:
                self._pull(fd, waking)
            for loop, waiters in waking.items():
                self._waker(loop).add(waiters)

    def _waker(self, loop: asyncio.AbstractEventLoop) -> _Waker:
        waker = self._wakers.get(loop)
        if waker is None:
            waker = self._wakers[loop] = _Waker(loop)
        return waker

    def _pull(
        self, fd: int, waking: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]]
    ) -> None:
        """One socket's read; holds its inbox no longer than that, so a dropped stream
        can be collected while the thread waits."""
        inbox = self._inboxes.get(fd)
        if inbox is not None:
            waiter = inbox.pull()
            if waiter is not None:
                waking.setdefault(inbox.loop, []).append(waiter)


_the_reader: _Reader | None = None
_start_lock = threading.Lock()


def _reader() -> _Reader:
    """The process's reader thread; a forked child, which has none, starts its own."""
    global _the_reader
    reader = _the_reader
    if reader is None or reader.pid != os.getpid():
        with _start_lock:
            reader = _the_reader
            if reader is None or reader.pid != os.getpid():
                reader = _the_reader = _Reader()
    return reader


def watch(sock: socket.socket) -> Inbox:
    """Start reading ``sock`` in the reader thread; its reads queue in the returned inbox,
    stamped where ``SO_TIMESTAMPNS`` is set on it (without it the kernel sends no stamp)."""
    inbox = Inbox(sock, asyncio.get_running_loop())
    _reader().watch(inbox)
    return inbox
