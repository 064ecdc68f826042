"""The socket reads of a request, bounded by the phase it is in.

httpcore reads a response body with the read timeout it found when the body
began, so a limit that changes after the first token (the wait for it may be
long, the gaps after it short) cannot be set through httpx's ``Timeout``. The
network backend here wraps httpcore's own: every read takes the smaller of
httpcore's timeout and the limit of the request being read, which
:class:`~latdoc.client._timeouts.TimeoutTransport` publishes in a context
variable while it waits for headers and for each chunk.

Over HTTP/2 one read can carry frames of other streams on the connection; it is
bounded by the limit of the request that made it.
"""

from __future__ import annotations

import contextvars
import ssl
import typing
from collections.abc import Iterable
from typing import Protocol

import httpcore
import httpx

__all__ = ["READ_LIMIT", "AsyncLimitedBackend", "LimitedBackend", "ReadLimit", "install"]


class ReadLimit(Protocol):
    def read_timeout(self) -> float | None:
        """The longest the next read may wait, in seconds; ``None`` for no limit."""


READ_LIMIT: contextvars.ContextVar[ReadLimit | None] = contextvars.ContextVar(
    "latdoc_client_read_limit", default=None
)

SocketOptions = Iterable[
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
]


def _bounded(timeout: float | None) -> float | None:
    limit = READ_LIMIT.get()
    ours = None if limit is None else limit.read_timeout()
    if ours is None:
        return timeout
    return ours if timeout is None else min(ours, timeout)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, _bounded(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, timeout)

    def close(self) -> None:
        self.inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        return _Stream(self.inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self.inner.get_extra_info(info)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self.inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self.inner.read(max_bytes, _bounded(timeout))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self.inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self.inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self.inner.get_extra_info(info)


class LimitedBackend(httpcore.NetworkBackend):
    """httpcore's network backend, its reads bounded by :data:`READ_LIMIT`."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self.inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: SocketOptions | None = None,
    ) -> httpcore.NetworkStream:
        stream = self.inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _Stream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: SocketOptions | None = None
    ) -> httpcore.NetworkStream:
        return _Stream(self.inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class AsyncLimitedBackend(httpcore.AsyncNetworkBackend):
    """The async :class:`LimitedBackend`."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self.inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: SocketOptions | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self.inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _AsyncStream(stream)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: SocketOptions | None = None
    ) -> httpcore.AsyncNetworkStream:
        return _AsyncStream(await self.inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def install(transport: httpx.HTTPTransport | httpx.AsyncHTTPTransport) -> None:
    """Bound the reads of an ``httpx.HTTPTransport`` / ``AsyncHTTPTransport``'s pool."""
    pool = transport._pool
    backend = pool._network_backend
    if isinstance(pool, httpcore.ConnectionPool):
        assert isinstance(backend, httpcore.NetworkBackend)
        pool._network_backend = LimitedBackend(backend)
    elif isinstance(pool, httpcore.AsyncConnectionPool):
        assert isinstance(backend, httpcore.AsyncNetworkBackend)
        pool._network_backend = AsyncLimitedBackend(backend)
