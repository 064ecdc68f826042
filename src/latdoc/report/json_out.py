"""JSON form of a trace: durations and offsets in milliseconds, ``null`` when not measured.

``dns_ms``, ``connect_ms``, ``tls_ms``, ``send_ms`` and ``wait_ms`` are phase
durations; ``ttfb_ms``, ``ttft_ms``, ``total_ms`` and each chunk's ``t_ms`` count
from the start of the request, as curl's ``time_starttransfer`` and ``time_total`` do.
"""

from __future__ import annotations

from typing import Any

from latdoc.records import RequestTrace


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def trace_to_dict(trace: RequestTrace) -> dict[str, Any]:
    error = trace.error
    return {
        "started_at": trace.started_at.isoformat(),
        "url": trace.url,
        "model": trace.model,
        "dialect": trace.dialect,
        "http_version": trace.http_version,
        "remote_ip": trace.remote_ip,
        "connection_id": trace.connection_id,
        "new_connection": trace.new_connection,
        "status": trace.status,
        "queue_ms": _r(trace.queue_ms),
        "dns_ms": _r(trace.dns_ms),
        "connect_ms": _r(trace.connect_ms),
        "tls_ms": _r(trace.tls_ms),
        "send_ms": _r(trace.send_ms),
        "send_acked": trace.sent_acked,
        "wait_ms": _r(trace.wait_ms),
        "ttfb_ms": _r(trace.ttfb_ms),
        "ttft_ms": _r(trace.ttft_ms),
        "tpot_ms": _r(trace.tpot_ms),
        "total_ms": _r(trace.total_ms),
        "rtt_ms": _r(trace.rtt_ms),
        "prompt_tokens": trace.prompt_tokens,
        "cached_prompt_tokens": trace.cached_prompt_tokens,
        "output_tokens": trace.output_tokens,
        "output_tokens_exact": trace.output_tokens_exact,
        "chunk_tokens_exact": trace.chunk_tokens_exact,
        "finish_reason": trace.finish_reason,
        "request_bytes": trace.request_bytes,
        "response_bytes": trace.response_bytes,
        "server_timing": dict(trace.server_timing),
        "tcp_info": None
        if trace.tcp_info is None
        else {
            "rtt_us": trace.tcp_info.rtt_us,
            "rttvar_us": trace.tcp_info.rttvar_us,
            "min_rtt_us": trace.tcp_info.min_rtt_us,
            "retransmits": trace.tcp_info.retransmits,
            "snd_cwnd": trace.tcp_info.snd_cwnd,
        },
        "error": None
        if error is None
        else {
            "code": error.code,
            "kind": str(error.kind),
            "phase": str(error.phase),
            "message": error.message,
            "status": error.status,
        },
        "chunks": [{"t_ms": round(c.t_ns / 1e6, 4), "tokens": c.tokens} for c in trace.chunks],
    }
