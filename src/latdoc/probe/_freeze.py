"""Freeze what was measured of one request into a :class:`RequestTrace`.

Shared by :class:`~latdoc.probe.ProbeSession` and by instrumented application
clients, so a trace means the same whichever of them sent the request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from latdoc.errors import TraceError
from latdoc.probe._backend import TimedStream
from latdoc.probe._failures import redact
from latdoc.probe._framing import EventDecoder
from latdoc.probe._recorder import Recorder, now_ns
from latdoc.probe._servertiming import parse_server_timing
from latdoc.probe._sse import SSEDecoder
from latdoc.probe._stream_state import StreamState
from latdoc.records import Chunk, ConnectAttempt, RequestTrace, TcpInfo, ToolCall

PROXY_HEADERS = (
    "akamai-grn",
    "cf-cache-status",
    "cf-ray",
    "content-length",
    "server",
    "transfer-encoding",
    "via",
    "x-accel-buffering",
    "x-amz-cf-id",
    "x-amz-cf-pop",
    "x-azure-ref",
    "x-cache",
    "x-cdn",
    "x-served-by",
)
"""Response headers kept with a trace: they name proxies, gateways and CDNs on the
way, or say the body was held back (a length known before the stream was sent)."""


@dataclass
class Exchange:
    """The protocol-level outcome of one request, before it is frozen."""

    status: int | None = None
    http_version: str | None = None
    stream: TimedStream | None = None
    headers: dict[str, str] = field(default_factory=dict)
    state: StreamState | None = None
    decoder: EventDecoder | None = None
    """What read the body's events, once a stream was found."""
    done: int | None = None
    tcp_info: TcpInfo | None = None


@dataclass(frozen=True, slots=True)
class TraceTarget:
    """Where a request went, as the trace names it, and the secret kept out of it."""

    url: str
    model: str
    dialect: str
    is_tls: bool
    secret: str | None = field(default=None, repr=False)
    proxy: str | None = None
    """The proxy the request went through, as shown (credentials masked)."""
    tunnel: bool = False
    """Through a tunnel the proxy opened (``CONNECT``, SOCKS5)."""


def freeze_trace(
    rec: Recorder,
    started_at: datetime,
    ex: Exchange,
    error: TraceError | None,
    request_body_bytes: int | None,
    target: TraceTarget,
    *,
    started_ns: int | None = None,
    request_id: str | None = None,
) -> RequestTrace:
    """Everything measured about one request, as a frozen :class:`RequestTrace`.

    Marks become offsets from ``t0``; on a reused connection DNS, connect and TLS
    end where the queue ended (zero, as curl reports them). The response id is its
    events' ``id``, else the response's ``X-Request-ID`` header.
    """
    t0 = rec.t0

    def rel(mark: int | None) -> int | None:
        return None if mark is None else mark - t0

    dns_done, connect_done, tls_done, tunnel_done = _setup_marks(rec, target)
    sent, acked = rec.sent
    first_byte = rec.first_byte
    events = _from_events(state := ex.state, t0)
    first_token = events["first_token_ns"]
    if first_token is not None and first_byte is not None and first_byte > first_token + t0:
        # The first token's frame came in the same read as the response's headers or a
        # later one: an HTTP/2 headers stamp the loop took late (after the write's own
        # late return) is its frame's read at the latest, and so is the send's end.
        first_byte = first_token + t0
        sent = None if sent is None else min(sent, first_byte)
    granted = rec.pool_granted
    if granted is not None and rec.queue_done is not None:
        granted = min(granted, rec.queue_done)
    server_timing = parse_server_timing(ex.headers)
    if state is not None:
        server_timing.update(state.server_timing)
    stream = ex.stream
    response_id = state.response_id if state is not None else None
    if response_id is None:
        response_id = ex.headers.get("x-request-id")
    if error is not None:
        error = redact(error, target.secret)
    return RequestTrace(
        started_at=started_at,
        t0_ns=t0,
        url=target.url,
        model=target.model,
        dialect=target.dialect,
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
        first_byte_ns=rel(first_byte),
        done_ns=rel(ex.done),
        status=ex.status,
        request_bytes=request_body_bytes,
        response_bytes=rec.bytes_read or None,
        server_timing=server_timing,
        tcp_info=ex.tcp_info,
        error=error,
        started_ns=started_ns,
        request_id=request_id,
        response_id=response_id,
        proxy_headers={k: ex.headers[k][:200] for k in PROXY_HEADERS if k in ex.headers},
        pool_granted_ns=rel(granted),
        write_start_ns=rel(rec.write_start),
        arrival_clock=None if stream is None else ("kernel" if stream.kernel_stamps else "loop"),
        connect_attempts=_attempts(rec),
        tls_resumed=rec.tls_resumed if rec.new_connection else None,
        tls_session_offered=rec.tls_session_offered and rec.new_connection,
        proxy=target.proxy,
        proxy_connect_done_ns=rel(tunnel_done),
        **events,
        **_keepalive(ex.decoder, t0),
    )


def _keepalive(decoder: EventDecoder | None, t0: int) -> dict[str, Any]:
    """How many ``: keep-alive`` comments came before the first event, and when the
    first and the last arrived (from ``t0``); none of it for a body not read as
    server-sent events."""
    if not isinstance(decoder, SSEDecoder):
        return {}
    seen = decoder.keepalive
    if seen is None:
        return {"keepalive_comments": 0}
    count, first, last = seen
    return {
        "keepalive_comments": count,
        "first_keepalive_ns": first - t0,
        "last_keepalive_ns": last - t0,
    }


_NO_EVENTS: dict[str, Any] = {
    "first_token_ns": None,
    "chunks": (),
    "chunk_tokens_exact": False,
    "prompt_tokens": None,
    "output_tokens": None,
    "output_tokens_exact": False,
    "cached_prompt_tokens": None,
    "finish_reason": None,
    "first_reasoning_ns": None,
    "first_answer_ns": None,
    "first_event_ns": None,
    "first_tool_call_ns": None,
    "reasoning_tokens": None,
    "unknown_events": None,
    "tool_calls": (),
}


def _from_events(state: StreamState | None, t0: int) -> dict[str, Any]:
    """The trace's fields the response's events told: the chunks and the output tokens,
    the usage, the finish reason, and when the first token, reasoning, answer, event and
    tool call arrived (from ``t0``)."""
    if state is None:
        return _NO_EVENTS

    def rel(mark: int | None) -> int | None:
        return None if mark is None else mark - t0

    chunks = tuple(state.chunks)
    tokens, tokens_exact, chunk_exact = _output_tokens(state, chunks)
    usage = state.usage
    return {
        "first_token_ns": rel(state.first_token),
        "chunks": chunks,
        "chunk_tokens_exact": chunk_exact,
        "prompt_tokens": usage.prompt_tokens if usage is not None else None,
        "output_tokens": tokens,
        "output_tokens_exact": tokens_exact,
        "cached_prompt_tokens": usage.cached_prompt_tokens if usage is not None else None,
        "finish_reason": state.finish_reason,
        "first_reasoning_ns": rel(state.first_reasoning),
        "first_answer_ns": rel(state.first_answer),
        "first_event_ns": rel(state.first_event),
        "first_tool_call_ns": rel(state.first_tool_call),
        "reasoning_tokens": usage.reasoning_tokens if usage is not None else None,
        "unknown_events": state.unknown_events,
        "tool_calls": tuple(
            sorted(
                (
                    ToolCall(name, chars, first - t0, last - t0)
                    for name, chars, first, last in state.tool_calls.values()
                ),
                key=lambda call: call.first_ns,
            )
        ),
    }


def _setup_marks(
    rec: Recorder, target: TraceTarget
) -> tuple[int | None, int | None, int | None, int | None]:
    """When DNS, connect, TLS and the proxy's tunnel ended; on a reused connection, where
    the queue ended (zero, as curl reports them), and ``None`` for a phase it never has."""
    if not rec.new_connection and rec.queue_done is not None:
        done = rec.queue_done
        return done, done, done if target.is_tls else None, done if target.tunnel else None
    return rec.dns_done, rec.connect_done, rec.tls_done, rec.proxy_connect_done


def _output_tokens(state: StreamState, chunks: tuple[Chunk, ...]) -> tuple[int | None, bool, bool]:
    """The output tokens, whether the server counted them, and whether each chunk's
    count is exact: the usage's count, else the tokenizer's of the text, else one a
    chunk."""
    usage = state.usage
    if usage is not None and usage.completion_tokens is not None:
        tokens = usage.completion_tokens
        return tokens, True, state.usage_on_chunks or tokens == len(chunks)
    if state.count_tokens is not None and state.text:
        return state.count_tokens("".join(state.text)), False, False
    if chunks:
        return len(chunks), False, False
    return None, False, False


def _attempts(rec: Recorder) -> tuple[ConnectAttempt, ...]:
    """The race's attempts, from ``t0``; one still running when the request ended (it
    failed or was cancelled meanwhile) ends there, as a timeout."""
    if not rec.new_connection:
        return ()
    out = []
    for a in rec.attempts:
        end = a.end if a.end is not None else now_ns()
        outcome = a.outcome if a.outcome is not None else "timeout"
        out.append(ConnectAttempt(a.address, a.family, a.start - rec.t0, end - a.start, outcome))
    return tuple(out)
