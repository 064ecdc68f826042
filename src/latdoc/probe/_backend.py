"""An httpcore network backend that times DNS, TCP connect, TLS and every socket read.

httpcore's default backend resolves and connects in one call. This one resolves
first with the event loop's threaded resolver (timed on its own), then connects to
the resolved address on asyncio's own streams (timed), and wraps the
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
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import httpcore

from latdoc.errors import DnsFailure, DnsTimeout
from latdoc.probe import _recorder as recorder
from latdoc.probe._aiostream import open_stream
from latdoc.probe._h2frames import FrameClock
from latdoc.probe._kstream import KernelStream, kernel_stamps_possible, open_kernel_stream
from latdoc.probe._recorder import now_ns
from latdoc.probe._tlsstream import TLSOverStream

_connection_ids = itertools.count(1)


class TimedStream(httpcore.AsyncNetworkStream):
    """A network stream that stamps the read times and knows its connection id."""

    def __init__(
        self,
        inner: httpcore.AsyncNetworkStream,
        connection_id: int,
        remote_ip: str,
    ) -> None:
        self._inner = inner
        self.connection_id = connection_id
        self.remote_ip = remote_ip
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
        if self._inner.get_extra_info("ssl_object") is None:
            inner = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        else:  # through an https:// proxy's tunnel: TLS inside its TLS
            inner = await TLSOverStream.wrap(self._inner, ssl_context, server_hostname, timeout)
        if rec is not None:
            rec.on_tls_done()
        wrapped = TimedStream(inner, self.connection_id, self.remote_ip)
        ssl_object = inner.get_extra_info("ssl_object")
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


class TimedBackend(httpcore.AsyncNetworkBackend):
    """Resolve (timed), connect (timed), and hand back a :class:`TimedStream`."""

    def __init__(self, resolver: Resolver = system_resolver, *, kernel_stamps: bool = True) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._resolver = resolver
        self._kernel_stamps = kernel_stamps

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
        last_error: Exception | None = None
        for address in addresses:
            try:
                stream = await _open(
                    address, port, remaining, local_address, socket_options, self._kernel_stamps
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
                continue
            if rec is not None:
                rec.on_connect_done()
            return TimedStream(stream, next(_connection_ids), address)
        assert last_error is not None
        raise last_error

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
