"""Lossless, versioned records for :class:`RequestTrace` and :class:`Sample`.

A record is plain JSON data: every field of the dataclass under its own name,
times as integer nanoseconds, ``None`` kept as ``None``, enums by value, the
wall-clock start as ISO 8601 (with its UTC offset when it has one), and chunks
as three parallel lists. Each record carries ``"v"``, its format version, and
is read by the loader for that version, so old stores stay readable::

    trace_from_record(trace_to_record(trace)) == trace

Loaders check types and raise :class:`ValueError` naming the field; callers at
the I/O boundary turn that into a :class:`~latdoc.errors.UsageError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.records import (
    Chunk,
    ConnectAttempt,
    RequestTrace,
    Sample,
    Step,
    TcpInfo,
    ToolCall,
)
from latdoc.store._fields import Fields

RECORD_VERSION = 3
"""Version of trace records: 2 added the wall-clock start in nanoseconds, the request and
response ids, and the attempt number; 3 the wait an error's ``Retry-After`` asked for and
the headers that name proxies on the way. Later additions to version 2 (reasoning, the
pool's grant, the first write, the arrival clock, the first event, the first tool
call, the prompt's characters and its estimated tokens, the proxy and its tunnel's end,
the keep-alive comments before the first event) are read as ``None`` where a record
lacks them; so are later additions to version 3 (the connection attempts and the tool
calls, read as none, TLS resumption, and TCP_INFO's loss counters)."""
SAMPLE_RECORD_VERSION = 3
"""Version of sample records: 2 added the client's event-loop lag, 3 the load worker."""
"""Version written by :func:`trace_to_record` and :func:`sample_to_record`."""

_TIMES = (
    "queue_done_ns",
    "dns_done_ns",
    "connect_done_ns",
    "tls_done_ns",
    "sent_ns",
    "first_byte_ns",
    "first_token_ns",
    "done_ns",
)
_OPTIONAL_INTS = (
    "connection_id",
    "status",
    "prompt_tokens",
    "output_tokens",
    "cached_prompt_tokens",
    "request_bytes",
    "response_bytes",
)
_OPTIONAL_STRS = ("http_version", "remote_ip", "finish_reason")
_FLAGS = ("sent_acked", "chunk_tokens_exact", "output_tokens_exact")
_ADDED_V2 = (
    "first_reasoning_ns",
    "first_answer_ns",
    "reasoning_tokens",
    "unknown_events",
    "pool_granted_ns",
    "write_start_ns",
    "first_event_ns",
    "first_tool_call_ns",
    "prompt_chars",
    "prompt_tokens_estimated",
    "proxy_connect_done_ns",
    "keepalive_comments",
    "first_keepalive_ns",
    "last_keepalive_ns",
    "due_ns",
)
"""Optional integers added to version 2 records later: absent from older ones, read as None."""
_TCP_INTS = ("rtt_us", "rttvar_us", "retransmits", "snd_cwnd")
_TCP_OPTIONAL_INTS = ("min_rtt_us", "bytes_acked", "bytes_received")
_TCP_ADDED = (
    "lost",
    "backoff_retransmits",
    "data_segments_out",
    "data_segments_in",
    "out_of_order_in",
)
"""TCP_INFO counters added to version 3 records later: read as None where absent."""
_ATTEMPT_OUTCOMES = frozenset({"connected", "failed", "timeout", "cancelled", "spare"})


def trace_to_record(trace: RequestTrace) -> dict[str, Any]:
    """Every field of ``trace`` as JSON-serialisable data."""
    record: dict[str, Any] = {
        "v": RECORD_VERSION,
        "started_at": trace.started_at.isoformat(),
        "t0_ns": trace.t0_ns,
        "url": trace.url,
        "model": trace.model,
        "dialect": trace.dialect,
        "new_connection": trace.new_connection,
    }
    for name in (*_OPTIONAL_STRS, *_OPTIONAL_INTS, *_TIMES, *_FLAGS):
        record[name] = getattr(trace, name)
    record["chunks"] = {
        "t_ns": [c.t_ns for c in trace.chunks],
        "chars": [c.chars for c in trace.chunks],
        "tokens": [c.tokens for c in trace.chunks],
    }
    record["server_timing"] = dict(trace.server_timing)
    record["tcp_info"] = None if trace.tcp_info is None else _tcp_to_record(trace.tcp_info)
    record["error"] = None if trace.error is None else _error_to_record(trace.error)
    record["started_ns"] = trace.started_ns
    record["request_id"] = trace.request_id
    record["response_id"] = trace.response_id
    record["attempt"] = trace.attempt
    for name in _ADDED_V2:
        record[name] = getattr(trace, name)
    record["proxy_headers"] = dict(trace.proxy_headers)
    record["arrival_clock"] = trace.arrival_clock
    record["proxy"] = trace.proxy
    record["connect_attempts"] = [
        {
            "address": a.address,
            "family": a.family,
            "start_ns": a.start_ns,
            "elapsed_ns": a.elapsed_ns,
            "outcome": a.outcome,
        }
        for a in trace.connect_attempts
    ]
    record["tls_resumed"] = trace.tls_resumed
    record["tls_session_offered"] = trace.tls_session_offered
    record["tool_calls"] = [
        {
            "name": c.name,
            "argument_chars": c.argument_chars,
            "first_ns": c.first_ns,
            "last_ns": c.last_ns,
        }
        for c in trace.tool_calls
    ]
    record["relay_us"] = list(trace.relay_us)
    return record


def trace_from_record(record: Mapping[str, Any]) -> RequestTrace:
    """The trace that :func:`trace_to_record` wrote, from any known record version."""
    return _loader(_TRACE_LOADERS, record, "trace")(record)


def sample_to_record(sample: Sample) -> dict[str, Any]:
    """A sample's labels plus its trace record."""
    return {
        "v": SAMPLE_RECORD_VERSION,
        "index": sample.index,
        "step": sample.step,
        "target_prompt_tokens": sample.target_prompt_tokens,
        "concurrency": sample.concurrency,
        "cold": sample.cold,
        "loop_lag_ms": sample.loop_lag_ms,
        "worker": sample.worker,
        "trace": trace_to_record(sample.trace),
    }


def sample_from_record(record: Mapping[str, Any]) -> Sample:
    """The sample that :func:`sample_to_record` wrote, from any known record version."""
    return _loader(_SAMPLE_LOADERS, record, "sample")(record)


def _tcp_to_record(info: TcpInfo) -> dict[str, Any]:
    return {name: getattr(info, name) for name in (*_TCP_INTS, *_TCP_OPTIONAL_INTS, *_TCP_ADDED)}


def _error_to_record(error: TraceError) -> dict[str, Any]:
    return {
        "kind": error.kind.value,
        "phase": error.phase.value,
        "message": error.message,
        "status": error.status,
        "retry_after_s": error.retry_after_s,
    }


def _trace_v1(record: Mapping[str, Any]) -> RequestTrace:
    r = Fields(record, "trace")
    values: dict[str, Any] = {name: r.opt_integer(name) for name in (*_OPTIONAL_INTS, *_TIMES)}
    values.update({name: r.opt_text(name) for name in _OPTIONAL_STRS})
    values.update({name: r.flag(name) for name in _FLAGS})
    tcp = r.opt_mapping("tcp_info")
    error = r.opt_mapping("error")
    return RequestTrace(
        started_at=r.timestamp("started_at"),
        t0_ns=r.integer("t0_ns"),
        url=r.text("url"),
        model=r.text("model"),
        dialect=r.text("dialect"),
        new_connection=r.opt_flag("new_connection"),
        chunks=_chunks_v1(r.mapping("chunks")),
        server_timing=r.numbers("server_timing"),
        tcp_info=None if tcp is None else _tcp_v1(tcp),
        error=None if error is None else _error_v1(error),
        **values,
    )


def _chunks_v1(record: Mapping[str, Any]) -> tuple[Chunk, ...]:
    r = Fields(record, "chunks")
    times, chars, tokens = r.integers("t_ns"), r.integers("chars"), r.integers("tokens")
    if not len(times) == len(chars) == len(tokens):
        raise ValueError("chunks: t_ns, chars and tokens differ in length")
    return tuple(Chunk(t, c, n) for t, c, n in zip(times, chars, tokens, strict=True))


def _tcp_v1(record: Mapping[str, Any]) -> TcpInfo:
    r = Fields(record, "tcp_info")
    values: dict[str, Any] = {name: r.integer(name) for name in _TCP_INTS}
    values.update({name: r.opt_integer(name) for name in _TCP_OPTIONAL_INTS})
    values.update({name: r.opt_integer(name) for name in _TCP_ADDED if r.has(name)})
    return TcpInfo(**values)


def _error_v1(record: Mapping[str, Any]) -> TraceError:
    r = Fields(record, "error")
    return TraceError(
        kind=ErrorKind(r.text("kind")),
        phase=Phase(r.text("phase")),
        message=r.text("message"),
        status=r.opt_integer("status"),
    )


def _sample_v1(record: Mapping[str, Any]) -> Sample:
    r = Fields(record, "sample")
    return Sample(
        step=Step(r.text("step")),
        trace=trace_from_record(r.mapping("trace")),
        target_prompt_tokens=r.opt_integer("target_prompt_tokens"),
        concurrency=r.integer("concurrency"),
        cold=r.flag("cold"),
        index=r.integer("index"),
    )


def _trace_v2(record: Mapping[str, Any]) -> RequestTrace:
    r = Fields(record, "trace")
    attempt = r.integer("attempt")
    if attempt < 1:
        raise ValueError(f"trace.attempt: expected 1 or more, got {attempt}")
    return replace(
        _trace_v1(record),
        started_ns=r.opt_integer("started_ns"),
        request_id=r.opt_text("request_id"),
        response_id=r.opt_text("response_id"),
        attempt=attempt,
        arrival_clock=r.opt_text("arrival_clock") if "arrival_clock" in record else None,
        proxy=r.opt_text("proxy") if "proxy" in record else None,
        **_added_v2(r, record),
    )


def _added_v2(r: Fields, record: Mapping[str, Any]) -> dict[str, Any]:
    return {name: r.opt_integer(name) for name in _ADDED_V2 if name in record}


def _trace_v3(record: Mapping[str, Any]) -> RequestTrace:
    r = Fields(record, "trace")
    trace = replace(
        _trace_v2(record),
        proxy_headers=r.texts("proxy_headers"),
        connect_attempts=tuple(
            _attempt_v3(a)
            for a in (r.objects("connect_attempts") if r.has("connect_attempts") else ())
        ),
        tls_resumed=r.opt_flag("tls_resumed") if r.has("tls_resumed") else None,
        tls_session_offered=r.flag("tls_session_offered")
        if r.has("tls_session_offered")
        else False,
        tool_calls=tuple(
            _tool_call_v3(c) for c in (r.objects("tool_calls") if r.has("tool_calls") else ())
        ),
        relay_us=tuple(r.integers("relay_us")) if r.has("relay_us") else (),
    )
    if trace.error is None:
        return trace
    wait = Fields(record["error"], "trace.error").opt_number("retry_after_s")
    return replace(trace, error=replace(trace.error, retry_after_s=wait))


def _attempt_v3(record: Mapping[str, Any]) -> ConnectAttempt:
    r = Fields(record, "trace.connect_attempts")
    family, outcome = r.integer("family"), r.text("outcome")
    if family not in (4, 6):
        raise ValueError(f"trace.connect_attempts.family: expected 4 or 6, got {family}")
    if outcome not in _ATTEMPT_OUTCOMES:
        raise ValueError(f"trace.connect_attempts.outcome: unknown {outcome!r}")
    return ConnectAttempt(
        r.text("address"), family, r.integer("start_ns"), r.integer("elapsed_ns"), outcome
    )


def _tool_call_v3(record: Mapping[str, Any]) -> ToolCall:
    r = Fields(record, "trace.tool_calls")
    chars = r.integer("argument_chars")
    if chars < 0:
        raise ValueError(f"trace.tool_calls.argument_chars: expected 0 or more, got {chars}")
    return ToolCall(r.opt_text("name"), chars, r.integer("first_ns"), r.integer("last_ns"))


_TRACE_LOADERS: dict[int, Callable[[Mapping[str, Any]], RequestTrace]] = {
    1: _trace_v1,
    2: _trace_v2,
    3: _trace_v3,
}


def _sample_v2(record: Mapping[str, Any]) -> Sample:
    lag = record.get("loop_lag_ms")
    if lag is not None and (isinstance(lag, bool) or not isinstance(lag, int | float)):
        raise ValueError("sample.loop_lag_ms: expected a number")
    return replace(_sample_v1(record), loop_lag_ms=None if lag is None else float(lag))


def _sample_v3(record: Mapping[str, Any]) -> Sample:
    worker = Fields(record, "sample").opt_integer("worker")
    if worker is not None and worker < 0:
        raise ValueError(f"sample.worker: expected 0 or more, got {worker}")
    return replace(_sample_v2(record), worker=worker)


_SAMPLE_LOADERS: dict[int, Callable[[Mapping[str, Any]], Sample]] = {
    1: _sample_v1,
    2: _sample_v2,
    3: _sample_v3,
}

_T = TypeVar("_T")


def _loader(
    loaders: Mapping[int, Callable[[Mapping[str, Any]], _T]], record: Mapping[str, Any], what: str
) -> Callable[[Mapping[str, Any]], _T]:
    if not isinstance(record, Mapping):
        raise ValueError(f"{what} record is {type(record).__name__}, not an object")
    version = record.get("v")
    if type(version) is not int or version not in loaders:
        known = ", ".join(str(v) for v in sorted(loaders))
        raise ValueError(f"{what} record version {version!r} is not one latdoc reads ({known})")
    return loaders[version]
