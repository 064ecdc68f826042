"""Send streamed completion requests and turn each into a :class:`RequestTrace`.

A :class:`ProbeSession` owns one httpcore connection pool on the timed network
backend. Each call to :meth:`ProbeSession.request` binds a fresh
:class:`~latdoc.probe._recorder.Recorder` to the task, sends one request, decodes the
event stream as it arrives and freezes everything measured into a trace. A failed
request never raises: its trace carries a typed :class:`TraceError` naming the
phase. Only cancellation propagates.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import httpcore

from latdoc.errors import ErrorKind, Phase, StreamFailure, TraceError
from latdoc.probe._backend import Resolver, TimedBackend, TimedStream, system_resolver, warm_up
from latdoc.probe._dialects import Prompt, error_message, request_body
from latdoc.probe._endpoint import Endpoint, Timeouts, make_ssl_context
from latdoc.probe._failures import classify, closed_before_answering, redact
from latdoc.probe._recorder import Recorder, now_ns
from latdoc.probe._servertiming import parse_server_timing
from latdoc.probe._sse import SSEDecoder
from latdoc.probe._stream_state import EventHook, StreamState
from latdoc.probe._tcpinfo import read_tcp_info
from latdoc.records import Chunk, RequestTrace, TcpInfo

__all__ = ["Endpoint", "EventHook", "ProbeSession", "Timeouts", "make_ssl_context"]

_ERROR_BODY_LIMIT = 64 * 1024

_USER_AGENT = b"latdoc"


@dataclass
class _Exchange:
    """The protocol-level outcome of one request, before it is frozen."""

    status: int | None = None
    http_version: str | None = None
    stream: TimedStream | None = None
    headers: dict[str, str] = field(default_factory=dict)
    state: StreamState | None = None
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
        prompt: Prompt,
        max_tokens: int,
        *,
        on_event: EventHook | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> RequestTrace:
        """Send one streamed request and return what was measured. Never raises
        for a failed request; the trace's ``error`` says what failed.

        ``prompt`` is the user's text, or a whole conversation as chat messages
        (``{"role": ..., "content": ...}``).

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
        elif closed_before_answering(trace):
            trace = await self._send(prompt, max_tokens, on_event, extra)
        return trace

    async def _send(
        self,
        prompt: Prompt,
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
        prompt: Prompt,
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
                raise StreamFailure(
                    TraceError(
                        ErrorKind.MALFORMED,
                        rec.phase,
                        f"response is not an event stream (content-type: {ctype or 'none'})",
                    )
                )
            state = StreamState(rec.t0, self._count_tokens, on_event)
            out.state = state
            decoder = SSEDecoder()
            stream = out.stream
            async for raw in response.aiter_stream():
                t_read = stream.last_read_ns if stream is not None else None
                for event in decoder.feed(raw, t_read or now_ns()):
                    state.on_event(event, rec)
            for event in decoder.close(now_ns()):
                state.on_event(event, rec)
            out.done = now_ns()
            if stream is not None:
                out.tcp_info = read_tcp_info(stream.socket)
            if not state.done_marker and state.finish_reason is None:
                raise StreamFailure(
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
        raise StreamFailure(
            TraceError(ErrorKind.HTTP, Phase.WAIT, f"HTTP {status}: {message}", status)
        )

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
            error = redact(error, self.endpoint.api_key)
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
