"""An httpcore network backend that times DNS, TCP connect, TLS and every socket read.

httpcore's default backend resolves and connects in one call. This one resolves
first with the event loop's threaded resolver (timed on its own), then races the
resolved addresses as happy eyeballs (RFC 8305) does (:func:`happy_eyeballs`: both
families interleaved, the next attempt started :data:`CONNECTION_ATTEMPT_DELAY_S`
after the last, the first to connect kept), each attempt recorded, and wraps the
stream so the TLS handshake (with the original host name for SNI and certificate
checks, which httpcore passes as ``server_hostname``) and each read are timed too.
Marks go to the :class:`~latdoc.probe._recorder.Recorder` of the running request.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import ssl
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpcore

from latdoc.errors import DnsFailure, DnsTimeout
from latdoc.probe import _recorder as recorder
from latdoc.probe._aiostream import open_stream
from latdoc.probe._h2frames import FrameClock
from latdoc.probe._kstream import KernelStream, kernel_stamps_possible, open_kernel_stream
from latdoc.probe._recorder import now_ns
from latdoc.probe._tlsstream import TLSOverStream

_connection_ids = itertools.count(1)

CONNECTION_ATTEMPT_DELAY_S = 0.250
"""How long an attempt has alone before the next address is tried as well: RFC 8305's
recommended connection attempt delay, the one curl and Chrome use too."""

_T = TypeVar("_T")


class TimedStream(httpcore.AsyncNetworkStream):
    """A network stream that stamps the read times and knows its connection id."""

    def __init__(
        self,
        inner: httpcore.AsyncNetworkStream,
        connection_id: int,
        remote_ip: str,
        tls_sessions: TlsSessions | None = None,
        peer: tuple[str, int] | None = None,
    ) -> None:
        self._inner = inner
        self.connection_id = connection_id
        self.remote_ip = remote_ip
        self._tls_sessions = tls_sessions
        self._peer = peer
        self.last_read_ns: int | None = None
        """Arrival of the last read: the kernel's stamp where there is one, else the loop's."""
        self.frames: FrameClock | None = None
        """Where each HTTP/2 frame arrived, on a multiplexed connection."""

    def data_arrival(self, stream_id: int | None) -> int | None:
        """When the piece of a response body just handed over arrived: its HTTP/2 DATA
        frame's read for ``stream_id`` on a multiplexed connection, else the last read."""
        frames = self.frames
        t = frames.data_ns(stream_id) if frames is not None and stream_id is not None else None
        return self.last_read_ns if t is None else t

    def headers_arrival(self, stream_id: int | None) -> int | None:
        """When the response headers arrived, as :meth:`data_arrival` tells a body piece's."""
        frames = self.frames
        t = frames.headers_ns(stream_id) if frames is not None and stream_id is not None else None
        return self.last_read_ns if t is None else t

    def forget(self, stream_id: int | None) -> None:
        """Drop the frame arrivals kept for a request that is over."""
        if self.frames is not None and stream_id is not None:
            self.frames.forget(stream_id)

    @property
    def kernel_stamps(self) -> bool:
        """Whether reads are stamped by the kernel rather than the event loop."""
        inner = self._inner
        return isinstance(inner, KernelStream) and inner.kernel_stamps

    @property
    def socket(self) -> Any:
        return self._inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._inner.read(max_bytes, timeout)
        t = now_ns()
        inner = self._inner
        if isinstance(inner, KernelStream) and inner.arrival_ns is not None:
            t = min(t, inner.arrival_ns)
        self.last_read_ns = t
        if self.frames is not None:
            self.frames.feed(data, t)
        else:
            rec = recorder.current()
            if rec is not None:
                rec.on_read(t, len(data))
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        rec = recorder.current()
        if rec is not None:
            rec.on_write(self, len(buffer))
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        rec = recorder.current()
        if rec is not None:
            rec.on_tls_start()
        sessions, raw = self._tls_sessions, self._inner
        peer = None if self._peer is None else (*self._peer, server_hostname or "")
        offer = None
        inner: httpcore.AsyncNetworkStream
        if raw.get_extra_info("ssl_object") is not None:  # through an https:// proxy's tunnel
            inner = await TLSOverStream.wrap(raw, ssl_context, server_hostname, timeout)
        else:
            if sessions is not None and peer is not None and isinstance(raw, KernelStream):
                offer = sessions.offer(peer, ssl_context)
            if offer is not None and isinstance(raw, KernelStream):
                inner = await raw.start_tls(ssl_context, server_hostname, timeout, session=offer)
            else:
                inner = await raw.start_tls(ssl_context, server_hostname, timeout)
        ssl_object = inner.get_extra_info("ssl_object")
        if rec is not None:
            resumed = None if ssl_object is None else bool(ssl_object.session_reused)
            rec.on_tls_done(resumed, offered=offer is not None)
        if sessions is not None and peer is not None and ssl_object is not None:
            sessions.keep(peer, ssl_context, ssl_object)
        wrapped = TimedStream(inner, self.connection_id, self.remote_ip)
        if ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2":
            wrapped.frames = FrameClock()
        return wrapped

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""Host name and port to IP addresses, in the order to try; raises ``socket.gaierror``."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's resolver (``getaddrinfo`` in the loop's thread pool)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        ip = str(sockaddr[0])
        if ip not in addresses:
            addresses.append(ip)
    return addresses


class TlsSessions:
    """The TLS sessions of a client's connections, by host, port and server name (the
    origin's, through a proxy's tunnel), to offer again.

    A session is read from its connection when it is offered, not when the handshake
    ends: a TLS 1.3 server sends its tickets after the handshake, so the session is
    resumable only once the connection has read them. Python's ``ssl`` resumes a
    session only with the context that made it, so the context is kept with it.
    """

    def __init__(self, *, offering: bool = False) -> None:
        self.offering = offering
        """Whether new connections offer the last session kept for their host."""
        self._last: dict[tuple[str, int, str], tuple[ssl.SSLContext, Any]] = {}

    def keep(self, peer: tuple[str, int, str], context: ssl.SSLContext, ssl_object: Any) -> None:
        self._last[peer] = (context, ssl_object)

    def offer(self, peer: tuple[str, int, str], context: ssl.SSLContext) -> ssl.SSLSession | None:
        """The session to offer a new connection to ``peer``, if any is resumable."""
        if not self.offering or peer not in self._last:
            return None
        kept_context, ssl_object = self._last[peer]
        session = ssl_object.session if kept_context is context else None
        if not isinstance(session, ssl.SSLSession):
            return None
        return session if session.has_ticket or session.id else None

    def sharing(self, *, offering: bool) -> TlsSessions:
        """These sessions, offered or not by the connections that use the copy."""
        other = TlsSessions(offering=offering)
        other._last = self._last
        return other


class TimedBackend(httpcore.AsyncNetworkBackend):
    """Resolve (timed), connect (timed), and hand back a :class:`TimedStream`."""

    def __init__(
        self,
        resolver: Resolver = system_resolver,
        *,
        kernel_stamps: bool = True,
        tls_sessions: TlsSessions | None = None,
    ) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._resolver = resolver
        self._kernel_stamps = kernel_stamps
        self._tls_sessions = tls_sessions

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        rec = recorder.current()
        if rec is not None:
            rec.on_dns_start()
        started = now_ns()
        addresses = await _resolve(self._resolver, host, port, timeout)
        if rec is not None:
            rec.on_dns_done()
        remaining = None if timeout is None else max(0.0, timeout - (now_ns() - started) / 1e9)
        kernel_stamps = self._kernel_stamps

        async def attempt(address: str, left: float | None) -> httpcore.AsyncNetworkStream:
            return await _open(address, port, left, local_address, socket_options, kernel_stamps)

        stream, address = await happy_eyeballs(
            addresses,
            attempt,
            remaining,
            on_attempts=rec.on_attempts if rec is not None else None,
            close=_close,
        )
        if rec is not None:
            rec.on_connect_done()
        return TimedStream(stream, next(_connection_ids), address, self._tls_sessions, (host, port))

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_unix_socket(path, timeout, socket_options)
        return TimedStream(stream, next(_connection_ids), path)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass
class Attempt:
    """One connection attempt of :func:`happy_eyeballs`, as ``perf_counter_ns`` marks."""

    address: str
    family: int
    start: int
    end: int | None = None
    outcome: str | None = None


def interleave(addresses: Sequence[str]) -> list[str]:
    """The addresses in the order RFC 8305 (section 4) tries them: the first address's
    family first, then the other family's first, and so on, each family in the
    resolver's order."""
    first = _family(addresses[0]) if addresses else 4
    same = [a for a in addresses if _family(a) == first]
    other = [a for a in addresses if _family(a) != first]
    order: list[str] = []
    for pair in itertools.zip_longest(same, other):
        order += [a for a in pair if a is not None]
    return order


async def happy_eyeballs(
    addresses: Sequence[str],
    connect: Callable[[str, float | None], Coroutine[Any, Any, _T]],
    timeout: float | None,
    *,
    delay_s: float = CONNECTION_ATTEMPT_DELAY_S,
    on_attempts: Callable[[list[Attempt]], None] | None = None,
    close: Callable[[_T], Awaitable[None]] | None = None,
) -> tuple[_T, str]:
    """Race connections to ``addresses`` as RFC 8305 says; the first to connect and its
    address.

    Attempts start in :func:`interleave` order, each ``delay_s`` after the one before,
    or at once when every attempt running has failed; the first to connect wins and
    the others are cancelled (one that connected too, in the same instant, is closed
    with ``close``). ``timeout`` bounds the race as a whole. ``on_attempts`` gets
    the list of :class:`Attempt` at the start, which the race fills in as it goes.

    asyncio's own race (``loop.create_connection(happy_eyeballs_delay=...)``) is not
    used: it hands back a transport over its own socket, not the kernel-stamped one
    the probe reads (:func:`~latdoc.probe._kstream.open_kernel_stream`), and it tells
    nothing of the attempts it made, which are what shows a dead address family.
    """
    loop = asyncio.get_running_loop()
    attempts: list[Attempt] = []
    if on_attempts is not None:
        on_attempts(attempts)
    order = interleave(addresses)
    begun = now_ns()
    end_by = None if timeout is None else begun + int(timeout * 1e9)
    running: dict[asyncio.Task[_T], Attempt] = {}
    next_start = begun
    left = list(order)
    winner: tuple[_T, str] | None = None
    last_error: BaseException | None = None
    try:
        while winner is None:
            now = now_ns()
            if left and (not running or now >= next_start):
                address = left.pop(0)
                budget = None if end_by is None else max(0.0, (end_by - now) / 1e9)
                attempt = Attempt(address, _family(address), now)
                attempts.append(attempt)
                running[loop.create_task(connect(address, budget))] = attempt
                next_start = now + int(delay_s * 1e9)
                continue
            if not running:
                break
            waits = [(next_start - now) / 1e9] if left else []
            if end_by is not None:
                waits.append((end_by - now) / 1e9)
            wait = max(0.0, min(waits)) if waits else None
            done, _ = await asyncio.wait(running, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            if not done and end_by is not None and now_ns() >= end_by:
                break
            for task in sorted(done, key=lambda t: running[t].start):
                attempt = running.pop(task)
                attempt.end = now_ns()
                error = task.exception()
                if error is not None:
                    attempt.outcome = (
                        "timeout" if isinstance(error, httpcore.ConnectTimeout) else "failed"
                    )
                    last_error = error
                    next_start = attempt.end
                elif winner is None:
                    attempt.outcome = "connected"
                    winner = task.result(), attempt.address
                else:
                    attempt.outcome = "spare"
                    if close is not None:
                        await close(task.result())
    finally:
        await _cancel(running, close, "cancelled" if winner is not None else "timeout")
    if winner is not None:
        return winner
    if last_error is None or (end_by is not None and now_ns() >= end_by):
        raise httpcore.ConnectTimeout(f"TCP connect took longer than {timeout or 0:g} s")
    raise last_error


async def _cancel(
    running: dict[asyncio.Task[_T], Attempt],
    close: Callable[[_T], Awaitable[None]] | None,
    outcome: str,
) -> None:
    """Cancel the attempts still running; one that connected meanwhile is closed."""
    if not running:
        return
    for task in running:
        task.cancel()
    ended = now_ns()
    for attempt in running.values():
        attempt.end, attempt.outcome = ended, outcome
    tasks = list(running)
    running.clear()
    await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled() and task.exception() is None and close is not None:
            with contextlib.suppress(Exception):
                await close(task.result())


async def _close(stream: httpcore.AsyncNetworkStream) -> None:
    await stream.aclose()


def _family(address: str) -> int:
    return 6 if ":" in address else 4


async def warm_up() -> None:
    """Pay the client's one-time costs before anything is timed.

    AnyIO loads its asyncio backend and TLS stream modules on first use (about
    30 ms), the event loop starts its resolver thread and the C library loads its
    name-service modules on the first lookup; left alone, all of it would be
    counted as queue and DNS time of the first, cold request.
    """
    import anyio.lowlevel
    import anyio.streams.tls

    await anyio.lowlevel.checkpoint()
    await asyncio.get_running_loop().run_in_executor(None, _load_resolver)


async def _open(
    ip: str,
    port: int,
    timeout: float | None,
    local_address: str | None,
    socket_options: Iterable[Any] | None,
    kernel_stamps: bool,
) -> httpcore.AsyncNetworkStream:
    if kernel_stamps and kernel_stamps_possible():
        return await open_kernel_stream(ip, port, timeout, local_address, socket_options)
    return await open_stream(ip, port, timeout, local_address, socket_options)


def _load_resolver() -> None:
    """The C library loads its name-service modules on the first lookup (~3 ms)."""
    with contextlib.suppress(OSError):
        socket.getaddrinfo("localhost", None)


async def _resolve(
    resolver: Resolver, host: str, port: int, timeout: float | None
) -> Sequence[str]:
    try:
        async with asyncio.timeout(timeout):
            addresses = await resolver(host, port)
    except TimeoutError:
        raise DnsTimeout(host, timeout or 0.0) from None
    except (socket.gaierror, UnicodeError) as exc:
        raise DnsFailure(host, str(exc)) from None
    if not addresses:
        raise DnsFailure(host, "no address")
    return addresses
