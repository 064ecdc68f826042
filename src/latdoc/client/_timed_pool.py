"""The instrumented pool: :class:`TimedPool` stands in for an httpx transport's
connection pool, binds a :class:`~latdoc.client._request_watch.RequestWatch` (and its
probe ``Recorder``) to each request, and hands the response body on piece by piece as
it arrives while the watch reads a copy, until the body ends, fails or is closed.
Exceptions leave in the pool library's own classes (httpcore, or httpcore2 under
``httpx2``), so httpx maps them as it always does. Each of the watch's steps runs
guarded: latdoc failing to watch a request costs that request's record, never the
request. With ``ask_usage`` a streamed request is sent asking for its usage where its
dialect has the field; a server that refuses the field gets the request again as the
application wrote it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
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
        if watch is None or response.status not in (400, 422):
            return response
        # The server may refuse the option the application never sent: then the request
        # goes again as the application wrote it, in the same place among those in
        # flight, the refusal is not kept as the application's, and this origin is not
        # asked again.
        try:
            body = await _read_capped(response.stream._inner)
        except Exception as exc:
            watch.call("fail", exc)
            raise _as_core(exc, self._core) from exc
        if b"stream_options" not in body:
            response.stream = _Observed(_Replayed(body), watch, self._core)
            return response
        concurrency = watch.concurrency
        watch.call("discard")
        self._refused_usage.add(_origin(request))
        response, _ = await self._timed(request, concurrency)
        return response

    def _asking(self, request: Any) -> Any | None:
        if not self._ask_usage:
            return None
        try:
            if _origin(request) in self._refused_usage:
                return None
            return with_usage_asked(request)
        except Exception:  # a request latdoc cannot rewrite goes as it is
            return None

    async def _timed(
        self, request: Any, concurrency: int | None = None
    ) -> tuple[Any, _Watched | None]:
        """Send ``request`` watched; ``concurrency`` is the place among those in flight
        of a request sent again (else it is counted in flight anew)."""
        watch = _Watched.start(request, self._handle, concurrency)
        if watch is None:
            return await self._pool.handle_async_request(request), None
        watch.hook_into(request)
        with watch.recording():
            try:
                response = await self._pool.handle_async_request(request)
            except Exception as exc:
                watch.call("fail", exc)
                raise _as_core(exc, self._core) from exc
            except BaseException:
                watch.call("abandon")
                raise
        watch.call("on_response", response)
        response.stream = _Observed(response.stream, watch, self._core)
        return response, watch


class _Watched:
    """A :class:`RequestWatch` whose every step runs guarded: a step that raises stops
    the watching of this request (it is counted as not recorded, through the sink's
    ``request_lost``), and the application's request goes on as if unwatched."""

    def __init__(self, watch: RequestWatch, handle: TrafficSink) -> None:
        self._watch = watch
        self._handle = handle
        self._broken = False

    @classmethod
    def start(
        cls, request: Any, handle: TrafficSink, concurrency: int | None = None
    ) -> _Watched | None:
        started_ns = time.time_ns()
        if concurrency is None:
            concurrency = handle.request_started()
        try:
            return cls(RequestWatch(request, started_ns, concurrency, handle), handle)
        except Exception as exc:
            handle.request_lost(exc, finished=False)
            return None

    @property
    def concurrency(self) -> int | None:
        """The request's place among those in flight, while it is still watched (a watch
        that broke has left the count)."""
        return None if self._broken else self._watch.concurrency

    def hook_into(self, request: Any) -> None:
        theirs = request.extensions.get("trace")
        ours = self._watch.rec.trace

        async def guarded(name: str, info: dict[str, Any]) -> None:
            if self._broken:
                return
            try:
                await ours(name, info)
            except Exception as exc:
                self._break(exc)

        request.extensions = {**request.extensions, "trace": _chain(guarded, theirs)}

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """The request's recorder made current for the network backend, when it can be."""
        rec = self._watch.rec
        try:
            rec.__enter__()
        except Exception as exc:
            self._break(exc)
            yield
            return
        try:
            yield
        finally:
            try:
                rec.__exit__(None, None, None)
            except Exception as exc:
                self._break(exc)

    def call(self, step: str, *args: Any) -> None:
        """Run one step of the watch; a failure stops watching, never reaches the caller."""
        if self._broken:
            return
        try:
            getattr(self._watch, step)(*args)
        except Exception as exc:
            self._break(exc)

    def _break(self, exc: Exception) -> None:
        if self._broken:
            return
        self._broken = True
        self._handle.request_lost(exc, finished=self._watch.kept)


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

    def __init__(self, inner: Any, watch: _Watched, core: ModuleType) -> None:
        self._inner = inner
        self._watch = watch
        self._core = core

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # Each piece goes on first and is read for the trace after: the application (or
        # a gateway's client) has it without waiting on the decoding. Nothing is read
        # from the connection in between, so the piece's arrival is still the last read.
        try:
            async for piece in self._inner:
                yield piece
                self._watch.call("on_bytes", piece)
        except Exception as exc:
            self._watch.call("fail", exc)
            raise _as_core(exc, self._core) from exc
        self._watch.call("end")

    async def aclose(self) -> None:
        try:
            close = getattr(self._inner, "aclose", None)
            if close is not None:
                await close()
        finally:
            self._watch.call("abandon")


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
