"""One application request watched on its way through an instrumented pool.

:class:`TimedPool` stands in for an httpx transport's connection pool: it binds a
probe ``Recorder`` to each request, hands the response body on piece by piece as it
arrives while the probe's SSE decoder reads a copy, and freezes the request into a
:class:`~latdoc.records.RequestTrace` when the body ends, fails or is closed.
Exceptions leave in the pool library's own classes (httpcore, or httpcore2 under
``httpx2``), so httpx maps them as it always does.
"""

from __future__ import annotations

import json
import sys
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from types import ModuleType
from typing import Any, Protocol

import httpcore

from latdoc.errors import (
    DnsFailure,
    DnsTimeout,
    ErrorKind,
    SSEError,
    StreamFailure,
    TraceError,
)
from latdoc.probe import (
    Dialect,
    Exchange,
    Recorder,
    SSEDecoder,
    StreamState,
    TimedStream,
    Timeouts,
    TraceTarget,
    classify,
    error_message,
    freeze_trace,
    http_error,
    now_ns,
    parse_event,
    read_tcp_info,
)
from latdoc.records import RequestTrace
from latdoc.store import redact_url

__all__ = ["TimedPool", "TrafficSink"]

_COPY_LIMIT = 256 * 1024
"""Bytes of a non-streamed body kept to read its usage or error message."""


class TrafficSink(Protocol):
    """Where finished requests go."""

    def request_started(self) -> int: ...

    def request_finished(self, trace: RequestTrace, concurrency: int) -> None: ...


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
        watch = _Watch(request, started_ns, concurrency, self._handle)
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

    def __init__(self, inner: Any, watch: _Watch, core: ModuleType) -> None:
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


class _Watch:
    """What is seen of one request, until it is frozen and kept (once)."""

    def __init__(
        self, request: Any, started_ns: int, concurrency: int, handle: TrafficSink
    ) -> None:
        self.rec = Recorder()
        self._request = request
        self._started_ns = started_ns
        self._concurrency = concurrency
        self._handle = handle
        self._exchange = Exchange()
        self._decoder: SSEDecoder | None = None
        self._inflate: Any = None
        self._copy: bytearray | None = None
        self._stream_error: TraceError | None = None
        self._kept = False

    def on_response(self, response: Any) -> None:
        ex = self._exchange
        ex.status = response.status
        version = response.extensions.get("http_version")
        ex.http_version = version.decode("ascii") if isinstance(version, bytes) else None
        stream = response.extensions.get("network_stream")
        if isinstance(stream, TimedStream):
            ex.stream = stream
        ex.headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers}
        encoding = ex.headers.get("content-encoding", "identity").lower()
        if encoding in ("gzip", "deflate"):
            self._inflate = zlib.decompressobj(wbits=47)
        elif encoding != "identity":
            return
        if response.status == 200 and "text/event-stream" in ex.headers.get("content-type", ""):
            self._decoder = SSEDecoder()
            spoken = _dialect_of(_url_text(self._request.url))
            dialect = Dialect(spoken) if spoken in set(Dialect) else Dialect.CHAT
            ex.state = StreamState(self.rec.t0, None, dialect=dialect)
        else:
            self._copy = bytearray()

    def on_bytes(self, piece: bytes) -> None:
        self.rec.bytes_read += len(piece)
        if self._inflate is not None:
            piece = self._inflate.decompress(piece)
        if self._copy is not None:
            if len(self._copy) < _COPY_LIMIT:
                self._copy += piece
            return
        decoder, state = self._decoder, self._exchange.state
        if decoder is None or state is None or not piece:
            return
        stream = self._exchange.stream
        t_read = stream.last_read_ns if stream is not None else None
        try:
            for event in decoder.feed(piece, t_read or now_ns()):
                state.on_event(event, self.rec)
        except (SSEError, StreamFailure) as exc:
            self._stop_decoding(exc)

    def _stop_decoding(self, exc: SSEError | StreamFailure) -> None:
        if isinstance(exc, StreamFailure):
            self._stream_error = exc.error
        else:
            self._stream_error = TraceError(ErrorKind.MALFORMED, self.rec.phase, str(exc))
        self._decoder = None

    def end(self) -> None:
        ex = self._exchange
        error = self._stream_error
        if self._decoder is not None and ex.state is not None:
            try:
                for event in self._decoder.close(now_ns()):
                    ex.state.on_event(event, self.rec)
            except (SSEError, StreamFailure) as exc:
                self._stop_decoding(exc)
                error = self._stream_error
        ex.done = now_ns()
        if ex.stream is not None:
            ex.tcp_info = read_tcp_info(ex.stream.socket)
        if error is None:
            error = self._outcome()
        self._keep(error)

    def _outcome(self) -> TraceError | None:
        ex = self._exchange
        status = ex.status or 0
        body = bytes(self._copy) if self._copy is not None else b""
        if status >= 400:
            message = error_message(body, ex.headers.get("content-type"))
            return http_error(status, message, ex.headers.get("retry-after"))
        state = ex.state
        if state is not None:
            if not state.done_marker and state.finish_reason is None:
                return TraceError(
                    ErrorKind.STREAM_BROKEN,
                    self.rec.phase,
                    "the stream ended without [DONE] or a finish_reason",
                )
            return None
        ex.state = _whole_body_state(body, self.rec.t0)
        return None

    def fail(self, exc: Exception) -> None:
        if self._kept:
            return
        try:
            error = classify(_as_probe(exc), self.rec, _timeouts(self._request))
        except Exception:
            error = TraceError(ErrorKind.STREAM_BROKEN, self.rec.phase, type(exc).__name__)
        self._keep(error)

    def abandon(self) -> None:
        """The application closed the response before its end: kept, without an end."""
        self._keep(None)

    def _keep(self, error: TraceError | None) -> None:
        if self._kept:
            return
        self._kept = True
        trace = freeze_trace(
            self.rec,
            datetime.fromtimestamp(self._started_ns // 1_000_000_000, UTC).replace(
                microsecond=self._started_ns // 1000 % 1_000_000
            ),
            self._exchange,
            error,
            _body_size(self._request),
            _target(self._request),
            started_ns=self._started_ns,
            request_id=_request_id(self._request),
        )
        self._handle.request_finished(trace, self._concurrency)


def _whole_body_state(body: bytes, t0: int) -> StreamState | None:
    """The usage of a response that was not streamed (its first token is not known)."""
    try:
        obj = json.loads(body)
    except ValueError:
        return None
    usage = obj.get("usage") if isinstance(obj, dict) else None
    if not isinstance(usage, dict):
        return None
    state = StreamState(t0, None)
    state.usage = parse_event({"usage": usage}).usage
    choices = obj.get("choices") or [{}]
    state.finish_reason = choices[0].get("finish_reason") if isinstance(choices[0], dict) else None
    return state


def _as_probe(exc: BaseException) -> BaseException:
    """The probe classifies httpcore's exceptions; httpcore2's have the same names."""
    if type(exc).__module__.startswith("httpcore2"):
        same = getattr(httpcore, type(exc).__name__, None)
        if isinstance(same, type) and issubclass(same, Exception):
            return same(str(exc))
    return exc


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


def _timeouts(request: Any) -> Timeouts:
    raw = request.extensions.get("timeout") or {}
    default = Timeouts()

    def pick(name: str, fallback: float) -> float:
        value = raw.get(name)
        return float(value) if isinstance(value, int | float) else fallback

    return Timeouts(
        connect=pick("connect", default.connect),
        read=pick("read", default.read),
        write=pick("write", default.write),
        pool=pick("pool", default.pool),
        total=default.total,
    )


def _target(request: Any) -> TraceTarget:
    url = request.url
    scheme = url.scheme.decode("ascii") if isinstance(url.scheme, bytes) else str(url.scheme)
    text = _url_text(url)
    return TraceTarget(
        url=redact_url(text),
        model=_model_of(request),
        dialect=_dialect_of(text),
        is_tls=scheme == "https",
        secret=_bearer(request),
    )


def _url_text(url: Any) -> str:
    def text(part: Any) -> str:
        return part.decode("ascii") if isinstance(part, bytes) else str(part)

    port = f":{url.port}" if url.port is not None else ""
    return f"{text(url.scheme)}://{text(url.host)}{port}{text(url.target)}"


def _header(request: Any, name: bytes) -> bytes | None:
    for key, value in request.headers:
        if key.lower() == name:
            return value  # type: ignore[no-any-return]
    return None


def _request_id(request: Any) -> str | None:
    """The ``X-Request-ID`` the application sent, if it sent one."""
    value = _header(request, b"x-request-id")
    return None if value is None else value.decode("latin-1")


def _dialect_of(url: str) -> str:
    """The dialect a request's path speaks (``http`` and the last path part for others)."""
    path = url.split("?", 1)[0]
    for dialect in (Dialect.CHAT, Dialect.COMPLETIONS, Dialect.ANTHROPIC, Dialect.RESPONSES):
        if path.endswith(dialect.path):
            return str(dialect)
    return path.rsplit("/", 1)[-1] or "http"


def _bearer(request: Any) -> str | None:
    value = _header(request, b"authorization")
    if value is None:
        value = _header(request, b"x-api-key")
        return None if value is None else value.decode("latin-1") or None
    scheme, _, token = value.decode("latin-1").partition(" ")
    return token or scheme or None


def _body_size(request: Any) -> int | None:
    value = _header(request, b"content-length")
    return int(value) if value is not None and value.isdigit() else None


def _model_of(request: Any) -> str:
    """The ``model`` of a JSON request body, read from its bytes when it has them."""
    body = _request_body(request)
    if body is None:
        return ""
    try:
        obj = json.loads(body)
    except ValueError:
        return ""
    model = obj.get("model") if isinstance(obj, dict) else None
    return model if isinstance(model, str) else ""


def _request_body(request: Any) -> bytes | None:
    stream = request.stream
    if isinstance(stream, bytes):
        return stream
    # httpx hands httpcore its request body as a byte stream over the bytes it holds.
    for attr in ("_stream", "_content"):
        held = getattr(stream, attr, None)
        if isinstance(held, bytes):
            return held
    return None
