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

from latdoc.client._request_watch import RequestWatch, TrafficSink
from latdoc.errors import DnsFailure, DnsTimeout

__all__ = ["TimedPool"]


class TimedPool:
    """Stands in for the transport's connection pool: binds a recorder per request."""

    def __init__(self, pool: Any, handle: TrafficSink) -> None:
        self._pool = pool
        self._handle = handle
        self._core: ModuleType = sys.modules[type(pool).__module__.partition(".")[0]]

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
        started_ns = time.time_ns()
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
        return response


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
