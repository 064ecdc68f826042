"""HTTP/1.1 on the probe's own connections, its responses parsed by llhttp (httptools).

httpcore's HTTP/1.1 connection parses with h11, in pure Python, and hands a body up
through three layers of async generators, one chunk at a time: at 64 streamed tokens
that was a third of what a request cost ``latdoc load``, more than every other part of
the probe. This connection keeps httpcore's pool, its keep-alive and its interface, the
network backend that times each phase, and httpcore's HTTP/2 connection where ALPN
picks ``h2``; only the HTTP/1.1 exchange is its own: the request written as httpcore
writes it (headers, then the body), the response parsed by the C parser uvicorn uses,
each read's body handed up at once. It says what happens through the request's
``trace`` extension with the names and details httpcore's connection uses, raises
httpcore's exceptions, and leaves a connection in the pool only when its response was
read to the end and the server keeps it alive.

Connections through a proxy keep httpcore's own (the proxy's handshake is its).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import httpcore

from latdoc.probe._h1read import Exchange

__all__ = ["LeanPool"]

_NEW, _ACTIVE, _IDLE, _CLOSED = range(4)


async def _emit(request: httpcore.Request, name: str, info: dict[str, Any]) -> None:
    """One event to the request's ``trace`` extension, named as httpcore names it."""
    trace = request.extensions.get("trace")
    if trace is not None:
        await trace(name, info)


class _Body:
    """The response body as httpcore's ``Response`` streams it."""

    def __init__(self, connection: LeanConnection, exchange: Exchange, request: httpcore.Request):
        self._connection = connection
        self._exchange = exchange
        self._request = request
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        exchange, request = self._exchange, self._request
        try:
            await _emit(request, "http11.receive_response_body.started", {"request": request})
            while True:
                data = exchange.take()
                if data:
                    yield data
                if not await exchange.more():
                    data = exchange.take()
                    if data:
                        yield data
                    break
            await _emit(request, "http11.receive_response_body.complete", {"return_value": None})
        except BaseException as exc:
            await _emit(request, "http11.receive_response_body.failed", {"exception": exc})
            await self.aclose()
            raise

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            request = self._request
            await _emit(request, "http11.response_closed.started", {})
            await self._connection.response_closed(self._exchange.reusable)
            await _emit(request, "http11.response_closed.complete", {"return_value": None})


def _head(request: httpcore.Request) -> bytes:
    """The request line and headers, as h11 would write them (each checked)."""
    lines = [b"%s %s HTTP/1.1" % (request.method, request.url.target)]
    for name, value in request.headers:
        if b"\r" in name or b"\n" in name or b":" in name or b"\r" in value or b"\n" in value:
            raise httpcore.LocalProtocolError(f"illegal header: {name!r}")
        lines.append(name + b": " + value)
    lines.append(b"\r\n")
    return b"\r\n".join(lines)


def _chunked(request: httpcore.Request) -> bool:
    return any(
        n.lower() == b"transfer-encoding" and v.lower() == b"chunked" for n, v in request.headers
    )


class LeanConnection(httpcore.AsyncConnectionInterface):
    """One connection to ``origin``: HTTP/1.1 of its own, or httpcore's HTTP/2 where the
    TLS handshake chose it."""

    def __init__(
        self,
        origin: httpcore.Origin,
        ssl_context: ssl.SSLContext | None,
        http2: bool,
        network_backend: httpcore.AsyncNetworkBackend,
        keepalive_expiry: float | None,
    ) -> None:
        self._origin = origin
        self._ssl_context = ssl_context
        self._http2 = http2
        self._backend = network_backend
        self._keepalive_expiry = keepalive_expiry
        self._connect_lock = asyncio.Lock()
        self._stream: httpcore.AsyncNetworkStream | None = None
        self._h2: httpcore.AsyncHTTP2Connection | None = None
        self._connect_failed = False
        self._state = _NEW
        self._expire_at: float | None = None
        self._served = 0

    # -- connecting -------------------------------------------------------------

    async def _connect(self, request: httpcore.Request) -> httpcore.AsyncNetworkStream:
        timeout = request.extensions.get("timeout", {}).get("connect")
        origin = self._origin
        kwargs: dict[str, Any] = {
            "host": origin.host.decode("ascii"),
            "port": origin.port,
            "local_address": None,
            "timeout": timeout,
            "socket_options": None,
        }
        await _emit(request, "connection.connect_tcp.started", kwargs)
        try:
            stream = await self._backend.connect_tcp(**kwargs)
        except BaseException as exc:
            await _emit(request, "connection.connect_tcp.failed", {"exception": exc})
            raise
        await _emit(request, "connection.connect_tcp.complete", {"return_value": stream})
        if origin.scheme != b"https":
            return stream
        context = self._ssl_context or httpcore.default_ssl_context()
        context.set_alpn_protocols(["http/1.1", "h2"] if self._http2 else ["http/1.1"])
        tls_kwargs: dict[str, Any] = {
            "ssl_context": context,
            "server_hostname": request.extensions.get("sni_hostname") or kwargs["host"],
            "timeout": timeout,
        }
        await _emit(request, "connection.start_tls.started", tls_kwargs)
        try:
            stream = await stream.start_tls(**tls_kwargs)
        except BaseException as exc:
            await _emit(request, "connection.start_tls.failed", {"exception": exc})
            raise
        await _emit(request, "connection.start_tls.complete", {"return_value": stream})
        return stream

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        if not self.can_handle_request(request.url.origin):
            raise RuntimeError(
                f"Attempted to send request to {request.url.origin} on connection to {self._origin}"
            )
        async with self._connect_lock:
            if self._stream is None:
                try:
                    stream = await self._connect(request)
                except BaseException:
                    self._connect_failed = True
                    raise
                ssl_object = stream.get_extra_info("ssl_object")
                if ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2":
                    self._h2 = httpcore.AsyncHTTP2Connection(
                        origin=self._origin, stream=stream, keepalive_expiry=self._keepalive_expiry
                    )
                self._stream = stream
        if self._h2 is not None:
            return await self._h2.handle_async_request(request)
        return await self._exchange(request, self._stream)

    # -- HTTP/1.1 ---------------------------------------------------------------

    async def _exchange(
        self, request: httpcore.Request, stream: httpcore.AsyncNetworkStream
    ) -> httpcore.Response:
        if self._state not in (_NEW, _IDLE):
            raise httpcore.ConnectionNotAvailable()
        self._state = _ACTIVE
        self._expire_at = None
        self._served += 1
        timeouts = request.extensions.get("timeout", {})
        write_timeout = timeouts.get("write")
        try:
            await _emit(request, "http11.send_request_headers.started", {"request": request})
            await stream.write(_head(request), write_timeout)
            await _emit(request, "http11.send_request_headers.complete", {"return_value": None})
            await _emit(request, "http11.send_request_body.started", {"request": request})
            chunked = _chunked(request)
            async for piece in request.stream:  # type: ignore[union-attr]
                if chunked:
                    if piece:
                        await stream.write(b"%x\r\n%s\r\n" % (len(piece), piece), write_timeout)
                else:
                    await stream.write(piece, write_timeout)
            if chunked:
                await stream.write(b"0\r\n\r\n", write_timeout)
            await _emit(request, "http11.send_request_body.complete", {"return_value": None})
            await _emit(request, "http11.receive_response_headers.started", {"request": request})
            exchange = Exchange(stream, timeouts.get("read"))
            await exchange.head()
            answer = exchange.answer
            version = b"HTTP/" + answer.version.encode("ascii")
            await _emit(
                request,
                "http11.receive_response_headers.complete",
                {"return_value": (version, answer.status, answer.reason, answer.headers, b"")},
            )
        except BaseException:
            await self._close()
            raise
        return httpcore.Response(
            status=answer.status,
            headers=answer.headers,
            content=_Body(self, exchange, request),
            extensions={
                "http_version": version,
                "reason_phrase": answer.reason,
                "network_stream": stream,
            },
        )

    async def response_closed(self, reusable: bool) -> None:
        """The response was read to its end (``reusable``) or given up."""
        if reusable and self._state == _ACTIVE:
            self._state = _IDLE
            if self._keepalive_expiry is not None:
                self._expire_at = time.monotonic() + self._keepalive_expiry
        else:
            await self._close()

    async def _close(self) -> None:
        self._state = _CLOSED
        if self._stream is not None:
            await self._stream.aclose()

    # -- the pool's questions ---------------------------------------------------

    async def aclose(self) -> None:
        if self._h2 is not None:
            await self._h2.aclose()
        else:
            await self._close()

    def can_handle_request(self, origin: httpcore.Origin) -> bool:
        return origin == self._origin

    def is_available(self) -> bool:
        if self._h2 is not None:
            return self._h2.is_available()
        if self._stream is None:
            return self._http2 and self._origin.scheme == b"https" and not self._connect_failed
        return self._state == _IDLE

    def has_expired(self) -> bool:
        if self._h2 is not None:
            return self._h2.has_expired()
        if self._stream is None:
            return self._connect_failed
        expired = self._expire_at is not None and time.monotonic() > self._expire_at
        # An idle connection with something to read was closed by the server.
        return expired or (
            self._state == _IDLE and bool(self._stream.get_extra_info("is_readable"))
        )

    def is_idle(self) -> bool:
        if self._h2 is not None:
            return self._h2.is_idle()
        if self._stream is None:
            return self._connect_failed
        return self._state == _IDLE

    def is_closed(self) -> bool:
        if self._h2 is not None:
            return self._h2.is_closed()
        if self._stream is None:
            return self._connect_failed
        return self._state == _CLOSED

    def info(self) -> str:
        if self._h2 is not None:
            return self._h2.info()
        if self._stream is None:
            return "CONNECTION FAILED" if self._connect_failed else "CONNECTING"
        state = ("NEW", "ACTIVE", "IDLE", "CLOSED")[self._state]
        return f"HTTP/1.1, {state}, Request Count: {self._served}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} [{self.info()}]>"


class LeanPool(httpcore.AsyncConnectionPool):
    """httpcore's pool, its connections :class:`LeanConnection`."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None,
        max_connections: int,
        http2: bool,
        network_backend: httpcore.AsyncNetworkBackend,
    ) -> None:
        super().__init__(
            ssl_context=ssl_context,
            max_connections=max_connections,
            http1=True,
            http2=http2,
            network_backend=network_backend,
        )
        self._lean = (ssl_context, http2, network_backend)

    def create_connection(self, origin: httpcore.Origin) -> httpcore.AsyncConnectionInterface:
        ssl_context, http2, backend = self._lean
        return LeanConnection(origin, ssl_context, http2, backend, keepalive_expiry=None)
