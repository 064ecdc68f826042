"""The machine-readable documents: a diagnosis and a trace, each naming its schema.

The diagnosis document is defined once, in :mod:`latdoc.model.document`, where the
store keeps it from too. Every duration is in milliseconds under a key ending
``_ms``, ``null`` when not measured. Keys that older versions wrote in another unit
(``shares`` and ``share_s`` in seconds, ``retry_after_s``, TCP_INFO's ``*_us``) stay
as they were, for the scripts that read them, with an ``_ms`` twin beside them.

In a trace, ``dns_ms``, ``connect_ms``, ``proxy_connect_ms`` (a proxy's ``CONNECT``
round trip or SOCKS5 handshake; ``null`` without a tunnel), ``tls_ms``, ``send_ms``,
``wait_ms`` and ``reasoning_ms`` are phase durations, and ``proxy`` names the proxy
the request went through (credentials masked; ``null``: direct); ``ttfb_ms``,
``first_event_ms`` (the stream's first event, a control event such as
``response.created`` included), ``ttft_ms``, ``ttfr_ms`` (first reasoning), ``ttfa_ms``
(first answer token), ``first_tool_call_ms`` (first tool-call output),
``tool_arguments_done_ms`` (the last byte of the last tool call's arguments), ``total_ms`` and
each chunk's ``t_ms`` count from the start of the request, as curl's ``time_starttransfer`` and
``time_total`` do. ``keepalive_comments`` counts the ``: keep-alive`` comments before the
stream's first event, and ``keepalive_wait_ms`` runs from the first byte to the last of
them: the wait in the server's queue, as DeepSeek tells it. ``first_output_kind`` says
what the first output was (``text``, ``reasoning`` or ``tool_call``), and ``tool_calls``
lists each call the response streamed: its ``name``, ``argument_chars``, and when its
first part and its arguments' last byte arrived (``first_ms``, ``last_ms``).
"""

from __future__ import annotations

from typing import Any

from latdoc.errors import TraceError
from latdoc.model.document import DIAGNOSIS_SCHEMA, diagnosis_to_dict, with_ms_twins
from latdoc.records import ConnectAttempt, RequestTrace, TcpInfo

TRACE_SCHEMA = "latdoc.trace/1"

__all__ = ["DIAGNOSIS_SCHEMA", "TRACE_SCHEMA", "diagnosis_to_dict", "trace_to_dict"]


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def trace_to_dict(trace: RequestTrace) -> dict[str, Any]:
    """One request as the ``latdoc.trace/1`` document (one line of ``probe --json``)."""
    error = trace.error
    tcp = trace.tcp_info
    return {
        "schema": TRACE_SCHEMA,
        "started_at": trace.started_at.isoformat(),
        "url": trace.url,
        "model": trace.model,
        "dialect": trace.dialect,
        "http_version": trace.http_version,
        "remote_ip": trace.remote_ip,
        "connection_id": trace.connection_id,
        "new_connection": trace.new_connection,
        "status": trace.status,
        **_phases(trace),
        "prompt_tokens": trace.prompt_tokens,
        "prompt_chars": trace.prompt_chars,
        "prompt_tokens_estimated": trace.prompt_tokens_estimated,
        "cached_prompt_tokens": trace.cached_prompt_tokens,
        "output_tokens": trace.output_tokens,
        "output_tokens_exact": trace.output_tokens_exact,
        "reasoning_tokens": trace.reasoning_tokens,
        "unknown_events": trace.unknown_events,
        "chunk_tokens_exact": trace.chunk_tokens_exact,
        "finish_reason": trace.finish_reason,
        "started_ns": trace.started_ns,
        "request_id": trace.request_id,
        "response_id": trace.response_id,
        "attempt": trace.attempt,
        "request_bytes": trace.request_bytes,
        "response_bytes": trace.response_bytes,
        "arrival_clock": trace.arrival_clock,
        "server_timing": dict(trace.server_timing),
        "proxy_headers": dict(trace.proxy_headers),
        "tcp_info": None if tcp is None else _tcp_info(tcp),
        "error": None if error is None else _error(error),
        "chunks": [{"t_ms": round(c.t_ns / 1e6, 4), "tokens": c.tokens} for c in trace.chunks],
        "connect_attempts": [_connect_attempt(a) for a in trace.connect_attempts],
        "tls_resumed": trace.tls_resumed,
        "tls_session_offered": trace.tls_session_offered,
        "keepalive_comments": trace.keepalive_comments,
        "keepalive_wait_ms": _r(trace.keepalive_wait_ms),
        "first_output_kind": trace.first_output_kind,
        "tool_calls": [
            {
                "name": c.name,
                "argument_chars": c.argument_chars,
                "first_ms": _r(c.first_ns / 1e6),
                "last_ms": _r(c.last_ns / 1e6),
            }
            for c in trace.tool_calls
        ],
    }


def _phases(trace: RequestTrace) -> dict[str, Any]:
    """The request's phases and marks in ms, and the round trip."""
    return {
        "queue_ms": _r(trace.queue_ms),
        "client_delay_ms": _r(trace.client_delay_ms),
        "dns_ms": _r(trace.dns_ms),
        "connect_ms": _r(trace.connect_ms),
        "tls_ms": _r(trace.tls_ms),
        "proxy": trace.proxy,
        "proxy_connect_ms": _r(trace.proxy_connect_ms),
        "send_ms": _r(trace.send_ms),
        "send_acked": trace.sent_acked,
        "wait_ms": _r(trace.wait_ms),
        "ttfb_ms": _r(trace.ttfb_ms),
        "ttft_ms": _r(trace.ttft_ms),
        "server_ttft_ms": _r(trace.server_ttft_ms),
        "ttfr_ms": _r(trace.ttfr_ms),
        "ttfa_ms": _r(trace.ttfa_ms),
        "reasoning_ms": _r(trace.reasoning_ms),
        "first_event_ms": _r(trace.first_event_ms),
        "first_tool_call_ms": _r(trace.first_tool_call_ms),
        "tool_arguments_done_ms": _r(trace.tool_arguments_done_ms),
        "tpot_ms": _r(trace.tpot_ms),
        "total_ms": _r(trace.total_ms),
        "rtt_ms": _r(trace.rtt_ms),
    }


def _tcp_info(tcp: TcpInfo) -> dict[str, Any]:
    return {
        **with_ms_twins(
            {
                "rtt_us": tcp.rtt_us,
                "rttvar_us": tcp.rttvar_us,
                "min_rtt_us": tcp.min_rtt_us,
            }
        ),
        "retransmits": tcp.retransmits,
        "snd_cwnd": tcp.snd_cwnd,
        "lost": tcp.lost,
        "backoff_retransmits": tcp.backoff_retransmits,
        "data_segments_out": tcp.data_segments_out,
        "data_segments_in": tcp.data_segments_in,
        "out_of_order_in": tcp.out_of_order_in,
    }


def _error(error: TraceError) -> dict[str, Any]:
    return {
        "code": error.code,
        "kind": str(error.kind),
        "phase": str(error.phase),
        "message": error.message,
        "status": error.status,
        "retry_after_s": error.retry_after_s,
    }


def _connect_attempt(a: ConnectAttempt) -> dict[str, Any]:
    return {
        "address": a.address,
        "family": a.family,
        "start_ms": round(a.start_ns / 1e6, 4),
        "ms": round(a.ms, 4),
        "outcome": a.outcome,
    }
