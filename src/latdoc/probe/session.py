"""Send streamed completion requests and turn each into a :class:`RequestTrace`.

A :class:`ProbeSession` owns one httpcore connection pool on the timed network
backend. Each call to :meth:`ProbeSession.request` binds a fresh
:class:`~latdoc.probe.recorder.Recorder` to the task, sends one request, decodes the
event stream as it arrives and freezes everything measured into a trace. A failed
request never raises: its trace carries a typed :class:`TraceError` naming the
phase. Only cancellation propagates.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpcore

from latdoc.errors import SSEError, UsageError
from latdoc.probe.backend import (
    DnsFailure,
    DnsTimeout,
    Resolver,
    TimedBackend,
    TimedStream,
    system_resolver,
    warm_up,
)
from latdoc.probe.dialects import (
    Dialect,
    EventInfo,
    Usage,
    error_message,
    parse_event,
    request_body,
)
from latdoc.probe.recorder import Recorder, now_ns
from latdoc.probe.servertiming import parse_server_timing
from latdoc.probe.sse import SSEDecoder, SSEEvent
from latdoc.probe.tcpinfo import read_tcp_info
from latdoc.probe.trace import Chunk, ErrorKind, Phase, RequestTrace, TcpInfo, TraceError

_ERROR_BODY_LIMIT = 64 * 1024

EventHook = Callable[[Any, int], None]
"""Called with each decoded JSON event and its arrival (absolute ``perf_counter_ns``)."""
_USER_AGENT = b"latdoc"


@dataclass(frozen=True)
class Timeouts:
    """Seconds; ``read`` applies to each socket read, ``total`` to the whole request."""

    connect: float = 10.0
    read: float = 60.0
    write: float = 30.0
    pool: float = 60.0
    total: float = 300.0


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests and how to speak to it."""

    base_url: str
    model: str
    dialect: Dialect = Dialect.CHAT
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"invalid URL {self.base_url!r}: expected http(s)://host[:port]/path, "
                "e.g. https://api.openai.com/v1"
            )
        if not self.model:
            raise UsageError("a model name is required (--model)")

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + self.dialect.path

    @property
    def is_tls(self) -> bool:
        return self.base_url.startswith("https:")


def make_ssl_context(cacert: str | None = None, *, insecure: bool = False) -> ssl.SSLContext:
    """TLS settings with curl's meaning: ``--cacert FILE``, ``--insecure``, ``SSL_CERT_FILE``."""
    cafile = cacert or os.environ.get("SSL_CERT_FILE") or None
    if cafile is not None and not os.path.isfile(cafile):
        raise UsageError(f"CA certificate file not found: {cafile}")
    try:
        ctx = ssl.create_default_context(cafile=cafile)
    except ssl.SSLError as exc:
        raise UsageError(f"cannot load CA certificates from {cafile}: {exc}") from None
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


class _Failure(Exception):
    def __init__(self, error: TraceError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class _StreamState:
    """What has been read of one response so far."""

    t0: int
    count_tokens: Callable[[str], int] | None
    on_json: EventHook | None = None
    chunks: list[Chunk] = field(default_factory=list)
    first_token: int | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    usage_on_chunks: bool = False
    done_marker: bool = False
    server_timing: dict[str, float] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)
    _last_completion_tokens: int = 0

    def on_event(self, event: SSEEvent, phase_of: Recorder) -> None:
        data = event.data
        if data.strip() == "[DONE]":
            self.done_marker = True
            return
        try:
            obj = json.loads(data)
        except ValueError:
            raise _Failure(
                TraceError(
                    ErrorKind.MALFORMED,
                    phase_of.phase,
                    f"event is not valid JSON: {data[:80]!r}",
                )
            ) from None
        if self.on_json is not None:
            self.on_json(obj, event.t_ns)
        info = parse_event(obj)
        if info.error is not None:
            raise _Failure(TraceError(ErrorKind.HTTP, phase_of.phase, f"error event: {info.error}"))
        self._apply(info, event.t_ns, obj, phase_of)

    def _apply(self, info: EventInfo, t_ns: int, obj: Any, rec: Recorder) -> None:
        if info.finish_reason is not None:
            self.finish_reason = info.finish_reason
        if info.server_timing:
            self.server_timing.update(info.server_timing)
        tokens = 1
        if info.usage is not None:
            self.usage = info.usage
            completed = info.usage.completion_tokens
            if info.output_chars and completed is not None:
                self.usage_on_chunks = True
                tokens = max(0, completed - self._last_completion_tokens)
                self._last_completion_tokens = completed
        if info.output_chars:
            if self.first_token is None:
                self.first_token = t_ns
                rec.phase = Phase.STREAM
            self.chunks.append(Chunk(t_ns - self.t0, info.output_chars, tokens))
            if self.count_tokens is not None:
                self.text.append(_output_text(obj))


def _output_text(obj: Any) -> str:
    parts: list[str] = []
    for choice in obj.get("choices") or ():
        delta = choice.get("delta") or {}
        for key in ("content", "reasoning_content", "reasoning"):
            value = delta.get(key)
            if isinstance(value, str):
                parts.append(value)
        if isinstance(choice.get("text"), str):
            parts.append(choice["text"])
    return "".join(parts)


@dataclass
class _Exchange:
    """The protocol-level outcome of one request, before it is frozen."""

    status: int | None = None
    http_version: str | None = None
    stream: TimedStream | None = None
    headers: dict[str, str] = field(default_factory=dict)
    state: _StreamState | None = None
    done: int | None = None
    tcp_info: TcpInfo | None = None


class ProbeSession:
    """A connection pool on the timed backend, and the requests sent through it."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        http2: bool = False,
        cacert: str | None = None,
        insecure: bool = False,
        timeouts: Timeouts | None = None,
        max_connections: int = 16,
        reuse_connections: bool = True,
        count_tokens: Callable[[str], int] | None = None,
        resolver: Resolver = system_resolver,
    ) -> None:
        self.endpoint = endpoint
        self.http2 = http2
        self.timeouts = timeouts or Timeouts()
        self.max_connections = max_connections
        self.reuse_connections = reuse_connections
        self.include_usage = True
        self._count_tokens = count_tokens
        self._resolver = resolver
        self._ssl = make_ssl_context(cacert, insecure=insecure) if endpoint.is_tls else None
        self._pool: httpcore.AsyncConnectionPool | None = None
        self._headers = self._build_headers()

    def _build_headers(self) -> list[tuple[bytes, bytes]]:
        headers = [
            (b"content-type", b"application/json"),
            (b"accept", b"text/event-stream"),
            (b"user-agent", _USER_AGENT),
        ]
        if self.endpoint.api_key:
            headers.append((b"authorization", b"Bearer " + self.endpoint.api_key.encode()))
        return headers

    def _new_pool(self) -> httpcore.AsyncConnectionPool:
        return httpcore.AsyncConnectionPool(
            ssl_context=self._ssl,
            max_connections=self.max_connections,
            http1=True,
            http2=self.http2,
            network_backend=TimedBackend(self._resolver),
        )

    async def __aenter__(self) -> ProbeSession:
        await warm_up()
        self._pool = self._new_pool()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.aclose()

    async def request(
        self,
        prompt: str,
        max_tokens: int,
        *,
        on_event: EventHook | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> RequestTrace:
        """Send one streamed request and return what was measured. Never raises
        for a failed request; the trace's ``error`` says what failed.

        ``on_event`` sees every decoded JSON event with the arrival time the trace
        uses for it, for fields the trace does not keep. ``headers`` are sent with
        this request only.
        """
        extra = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()
        ]
        trace = await self._send(prompt, max_tokens, on_event, extra)
        if (
            self.include_usage
            and trace.error is not None
            and trace.error.status in (400, 422)
            and "stream_options" in trace.error.message
        ):
            self.include_usage = False
            trace = await self._send(prompt, max_tokens, on_event, extra)
        elif _closed_before_answering(trace):
            trace = await self._send(prompt, max_tokens, on_event, extra)
        return trace

    async def _send(
        self,
        prompt: str,
        max_tokens: int,
        on_event: EventHook | None,
        extra: list[tuple[bytes, bytes]],
    ) -> RequestTrace:
        if self.reuse_connections:
            if self._pool is None:
                self._pool = self._new_pool()
            return await self._measure(self._pool, prompt, max_tokens, on_event, extra)
        pool = self._new_pool()
        try:
            return await self._measure(pool, prompt, max_tokens, on_event, extra)
        finally:
            await pool.aclose()

    async def _measure(
        self,
        pool: httpcore.AsyncConnectionPool,
        prompt: str,
        max_tokens: int,
        on_event: EventHook | None,
        extra_headers: list[tuple[bytes, bytes]],
    ) -> RequestTrace:
        ep = self.endpoint
        body = request_body(
            ep.dialect, ep.model, prompt, max_tokens, include_usage=self.include_usage
        )
        content = json.dumps(body).encode()
        started_at = datetime.now(UTC)
        exchange = _Exchange()
        error: TraceError | None = None
        with Recorder() as rec:
            try:
                async with asyncio.timeout(self.timeouts.total):
                    await self._exchange(pool, rec, content, exchange, on_event, extra_headers)
            except _Failure as failure:
                error = failure.error
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = classify(exc, rec, self.timeouts)
            if exchange.done is None:
                exchange.done = now_ns() if error is None else None
        return self._freeze(rec, started_at, exchange, error, len(content))

    async def _exchange(
        self,
        pool: httpcore.AsyncConnectionPool,
        rec: Recorder,
        content: bytes,
        out: _Exchange,
        on_event: EventHook | None,
        extra_headers: list[tuple[bytes, bytes]],
    ) -> None:
        t = self.timeouts
        extensions: dict[str, Any] = {
            "trace": rec.trace,
            "timeout": {"connect": t.connect, "read": t.read, "write": t.write, "pool": t.pool},
        }
        async with pool.stream(
            b"POST",
            self.endpoint.url,
            headers=self._headers + extra_headers,
            content=content,
            extensions=extensions,
        ) as response:
            out.status = response.status
            version = response.extensions.get("http_version")
            out.http_version = version.decode("ascii") if isinstance(version, bytes) else None
            network_stream = response.extensions.get("network_stream")
            if isinstance(network_stream, TimedStream):
                out.stream = network_stream
            out.headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers
            }
            if response.status != 200:
                await self._fail_on_status(response, rec, out)
            ctype = out.headers.get("content-type", "")
            if "text/event-stream" not in ctype:
                raise _Failure(
                    TraceError(
                        ErrorKind.MALFORMED,
                        rec.phase,
                        f"response is not an event stream (content-type: {ctype or 'none'})",
                    )
                )
            state = _StreamState(rec.t0, self._count_tokens, on_event)
            out.state = state
            decoder = SSEDecoder()
            stream = out.stream
            try:
                async for raw in response.aiter_stream():
                    t_read = stream.last_read_ns if stream is not None else None
                    for event in decoder.feed(raw, t_read or now_ns()):
                        state.on_event(event, rec)
                for event in decoder.close(now_ns()):
                    state.on_event(event, rec)
            except SSEError as exc:
                raise _Failure(TraceError(ErrorKind.MALFORMED, rec.phase, str(exc))) from None
            out.done = now_ns()
            if stream is not None:
                out.tcp_info = read_tcp_info(stream.socket)
            if not state.done_marker and state.finish_reason is None:
                raise _Failure(
                    TraceError(
                        ErrorKind.STREAM_BROKEN,
                        rec.phase,
                        "the stream ended without [DONE] or a finish_reason",
                    )
                )

    async def _fail_on_status(
        self, response: httpcore.Response, rec: Recorder, out: _Exchange
    ) -> None:
        body = bytearray()
        try:
            async for piece in response.aiter_stream():
                body += piece
                if len(body) >= _ERROR_BODY_LIMIT:
                    break
        except (httpcore.ReadError, httpcore.RemoteProtocolError, httpcore.ReadTimeout):
            pass
        status = response.status
        message = error_message(bytes(body), out.headers.get("content-type"))
        retry_after = out.headers.get("retry-after")
        if retry_after:
            message += f" (Retry-After: {retry_after})"
        raise _Failure(TraceError(ErrorKind.HTTP, Phase.WAIT, f"HTTP {status}: {message}", status))

    def _freeze(
        self,
        rec: Recorder,
        started_at: datetime,
        ex: _Exchange,
        error: TraceError | None,
        request_body_bytes: int,
    ) -> RequestTrace:
        t0 = rec.t0

        def rel(mark: int | None) -> int | None:
            return None if mark is None else mark - t0

        dns_done, connect_done, tls_done = rec.dns_done, rec.connect_done, rec.tls_done
        if not rec.new_connection and rec.queue_done is not None:
            dns_done = connect_done = rec.queue_done
            tls_done = rec.queue_done if self.endpoint.is_tls else None
        sent, acked = rec.sent
        state = ex.state
        server_timing = parse_server_timing(ex.headers)
        tokens: int | None = None
        tokens_exact = False
        chunk_exact = False
        chunks: tuple[Chunk, ...] = ()
        if state is not None:
            server_timing.update(state.server_timing)
            chunks = tuple(state.chunks)
            usage = state.usage
            if usage is not None and usage.completion_tokens is not None:
                tokens, tokens_exact = usage.completion_tokens, True
                chunk_exact = state.usage_on_chunks or tokens == len(chunks)
            elif state.count_tokens is not None and state.text:
                tokens = state.count_tokens("".join(state.text))
            elif chunks:
                tokens = len(chunks)
        usage = state.usage if state is not None else None
        stream = ex.stream
        if error is not None:
            error = _redact(error, self.endpoint.api_key)
        return RequestTrace(
            started_at=started_at,
            t0_ns=t0,
            url=self.endpoint.url,
            model=self.endpoint.model,
            dialect=str(self.endpoint.dialect),
            http_version=ex.http_version,
            remote_ip=stream.remote_ip if stream is not None else None,
            connection_id=stream.connection_id if stream is not None else None,
            new_connection=rec.new_connection if rec.queue_done is not None else None,
            queue_done_ns=rel(rec.queue_done),
            dns_done_ns=rel(dns_done),
            connect_done_ns=rel(connect_done),
            tls_done_ns=rel(tls_done),
            sent_ns=rel(sent),
            sent_acked=acked,
            first_byte_ns=rel(rec.first_byte),
            first_token_ns=rel(state.first_token) if state is not None else None,
            done_ns=rel(ex.done),
            status=ex.status,
            chunks=chunks,
            chunk_tokens_exact=chunk_exact,
            prompt_tokens=usage.prompt_tokens if usage is not None else None,
            output_tokens=tokens,
            output_tokens_exact=tokens_exact,
            cached_prompt_tokens=usage.cached_prompt_tokens if usage is not None else None,
            finish_reason=state.finish_reason if state is not None else None,
            request_bytes=request_body_bytes,
            response_bytes=rec.bytes_read or None,
            server_timing=server_timing,
            tcp_info=ex.tcp_info,
            error=error,
        )


def _closed_before_answering(trace: RequestTrace) -> bool:
    """A reused connection the server had already closed: nothing was answered, so
    the request is sent again on a new connection (curl does the same)."""
    return (
        trace.error is not None
        and trace.error.kind is ErrorKind.STREAM_BROKEN
        and trace.new_connection is False
        and trace.first_byte_ns is None
    )


def _redact(error: TraceError, secret: str | None) -> TraceError:
    if not secret or secret not in error.message:
        return error
    return TraceError(error.kind, error.phase, error.message.replace(secret, "***"), error.status)


def classify(exc: BaseException, rec: Recorder, timeouts: Timeouts) -> TraceError:
    """Map a low-level exception to the typed error of the phase it happened in."""
    phase = rec.phase
    if isinstance(exc, DnsFailure):
        return TraceError(ErrorKind.DNS, Phase.DNS, str(exc))
    if isinstance(exc, DnsTimeout):
        return TraceError(ErrorKind.TIMEOUT, Phase.DNS, str(exc))
    if isinstance(exc, httpcore.PoolTimeout):
        return TraceError(
            ErrorKind.TIMEOUT, Phase.QUEUE, f"no free connection within {timeouts.pool:g} s"
        )
    if isinstance(exc, httpcore.TimeoutException):
        limit = timeouts.connect if phase in (Phase.DNS, Phase.CONNECT, Phase.TLS) else None
        if isinstance(exc, httpcore.WriteTimeout):
            limit = timeouts.write
        elif isinstance(exc, httpcore.ReadTimeout):
            limit = timeouts.read
        detail = f"no progress within {limit:g} s" if limit is not None else "timed out"
        return TraceError(ErrorKind.TIMEOUT, phase, detail)
    if isinstance(exc, TimeoutError):
        return TraceError(
            ErrorKind.TIMEOUT, phase, f"no complete response within {timeouts.total:g} s"
        )
    if isinstance(exc, httpcore.ConnectError | ssl.SSLError):
        if phase is Phase.TLS or isinstance(exc, ssl.SSLError):
            return TraceError(ErrorKind.TLS, Phase.TLS, _describe(exc) or "TLS handshake failed")
        return TraceError(ErrorKind.CONNECT, Phase.CONNECT, _describe(exc) or "connect failed")
    if isinstance(exc, httpcore.NetworkError | httpcore.RemoteProtocolError | OSError):
        what = _describe(exc) or type(exc).__name__
        return TraceError(ErrorKind.STREAM_BROKEN, phase, f"connection broken: {what}")
    if isinstance(exc, httpcore.ProtocolError):
        return TraceError(ErrorKind.MALFORMED, phase, _describe(exc) or "protocol error")
    if isinstance(exc, SSEError):
        return TraceError(ErrorKind.MALFORMED, phase, str(exc))
    raise exc


def _describe(exc: BaseException) -> str:
    """The most specific message in the exception's cause chain."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for link in reversed(chain):
        if isinstance(link, ConnectionRefusedError):
            return "connection refused"
        if isinstance(link, OSError) and link.errno is not None and link.strerror:
            return link.strerror.lower()
    for link in chain:
        text = str(link).strip()
        if text:
            return text
    return ""
