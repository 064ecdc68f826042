"""The instrumented pool: :class:`TimedPool` stands in for an httpx transport's
connection pool, binds a :class:`~latdoc.client._request_watch.RequestWatch` (and its
probe ``Recorder``) to each request, and hands the response body on piece by piece as
it arrives while the watch reads a copy, until the body ends, fails or is closed.
Exceptions leave in the pool library's own classes (httpcore, or httpcore2 under
``httpx2``), so httpx maps them as it always does.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import Any

import httpcore

from latdoc.client._request_facts import with_usage_asked
from latdoc.client._request_watch import RequestWatch, TrafficSink
from latdoc.errors import DnsFailure, DnsTimeout

__all__ = ["TimedPool"]


class TimedPool:
    """Stands in for the transport's connection pool: binds a recorder per request."""

    def __init__(self, pool: Any, handle: TrafficSink, *, ask_usage: bool = False) -> None:
        self._pool = pool
        self._handle = handle
        self._core: ModuleType = sys.modules[type(pool).__module__.partition(".")[0]]
        self._ask_usage = ask_usage
        self._refused_usage: set[bytes] = set()
        """Origins that refused the usage option: their requests go as the app wrote them."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    async def __aenter__(self) -> TimedPool:
        await self._pool.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._pool.__aexit__(*exc)

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def handle_async_request(self, request: Any) -> Any:
        asked = self._asking(request)
        if asked is None:
            response, _ = await self._timed(request)
            return response
        response, watch = await self._timed(asked)
        if response.status not in (400, 422):
            return response
        # The server may refuse the option the application never sent: then the request
        # goes again as the application wrote it, in the same place among those in
        # flight, the refusal is not kept as the application's, and this origin is not
        # asked again.
        observed = response.stream
        try:
            body = await _read_capped(observed._inner)
        except Exception as exc:
            watch.fail(exc)
            raise _as_core(exc, self._core) from exc
        if b"stream_options" not in body:
            response.stream = _Observed(_Replayed(body), watch, self._core)
            return response
        watch.discard()
        self._refused_usage.add(_origin(request))
        response, _ = await self._timed(request, watch.concurrency)
        return response

    def _asking(self, request: Any) -> Any | None:
        if not self._ask_usage or _origin(request) in self._refused_usage:
            return None
        try:
            return with_usage_asked(request)
        except Exception:  # a body latdoc cannot rewrite goes as it is
            return None

    async def _timed(
        self, request: Any, concurrency: int | None = None
    ) -> tuple[Any, RequestWatch]:
        started_ns = time.time_ns()
        if concurrency is None:
            concurrency = self._handle.request_started()
        watch = RequestWatch(request, started_ns, concurrency, self._handle)
        rec = watch.rec
        user_trace = request.extensions.get("trace")
        request.extensions = {**request.extensions, "trace": _chain(rec.trace, user_trace)}
        with rec:
            try:
                response = await self._pool.handle_async_request(request)
            except Exception as exc:
                watch.fail(exc)
                raise _as_core(exc, self._core) from exc
            except BaseException:
                watch.abandon()
                raise
        watch.on_response(response)
        response.stream = _Observed(response.stream, watch, self._core)
        return response, watch


def _chain(
    ours: Callable[[str, dict[str, Any]], Awaitable[None]], theirs: Any
) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
    if theirs is None:
        return ours

    async def both(name: str, info: dict[str, Any]) -> None:
        await ours(name, info)
        await theirs(name, info)

    return both


class _Observed:
    """The response body, handed on piece by piece as it arrives, watched on the way."""

    def __init__(self, inner: Any, watch: RequestWatch, core: ModuleType) -> None:
        self._inner = inner
        self._watch = watch
        self._core = core

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for piece in self._inner:
                self._watch.on_bytes(piece)
                yield piece
        except Exception as exc:
            self._watch.fail(exc)
            raise _as_core(exc, self._core) from exc
        self._watch.end()

    async def aclose(self) -> None:
        try:
            close = getattr(self._inner, "aclose", None)
            if close is not None:
                await close()
        finally:
            self._watch.abandon()


_REFUSAL_LIMIT = 64 * 1024
"""Bytes of a refusal's body read to see whether it names the usage option."""


def _origin(request: Any) -> bytes:
    url = request.url
    return b"%s://%s:%d" % (url.scheme, url.host, url.port or 0)


async def _read_capped(stream: Any) -> bytes:
    """The body of a refusal (an error answer is small; at most :data:`_REFUSAL_LIMIT`
    bytes are kept of it), its stream closed."""
    body = bytearray()
    try:
        async for piece in stream:
            if len(body) < _REFUSAL_LIMIT:
                body += piece
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    return bytes(body)


class _Replayed:
    """A body already read, handed on as it came."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._body

    async def aclose(self) -> None:
        return None


def _as_core(exc: Exception, core: ModuleType) -> Exception:
    """The exception the pool's own library would have raised, for httpx to map."""
    if isinstance(exc, DnsTimeout):
        return core.ConnectTimeout(str(exc))  # type: ignore[no-any-return]
    if isinstance(exc, DnsFailure):
        return core.ConnectError(str(exc))  # type: ignore[no-any-return]
    if core is not httpcore and type(exc).__module__.partition(".")[0] == "httpcore":
        same = getattr(core, type(exc).__name__, None)
        if isinstance(same, type) and issubclass(same, Exception):
            return same(str(exc))
    return exc
