"""What is seen of one application request on its way through the pool, until it is
frozen into a :class:`~latdoc.records.RequestTrace` and handed to the
:class:`TrafficSink` (once): the response's status and headers, the body's bytes fed
to the probe's decoder of its dialect's framing (inflated when compressed) or kept to
read a non-streamed answer's usage and error, and the failure the probe classifies.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from datetime import UTC, datetime
from typing import Any, Protocol

import httpcore

from latdoc.client._request_facts import (
    body_size,
    dialect_of,
    json_body,
    prompt_size,
    request_id,
    request_timeouts,
    trace_target,
    url_text,
)
from latdoc.errors import ErrorKind, SSEError, StreamFailure, TraceError, UsageError
from latdoc.probe import (
    EventDecoder,
    Exchange,
    Recorder,
    StreamState,
    TimedStream,
    classify,
    dialects,
    error_message,
    freeze_trace,
    http_error,
    now_ns,
    parse_event,
    read_tcp_info,
)
from latdoc.records import RequestTrace

__all__ = ["RequestWatch", "TrafficSink"]

_COPY_LIMIT = 256 * 1024
"""Bytes of a non-streamed body kept to read its usage or error message."""


class TrafficSink(Protocol):
    """Where finished requests go."""

    def request_started(self) -> int: ...

    def request_finished(self, trace: RequestTrace, concurrency: int) -> None: ...

    def request_lost(self, exc: Exception, *, finished: bool) -> None:
        """Watching a request failed with ``exc``; ``finished`` when it was handed over
        already (else it is no longer in flight)."""


class RequestWatch:
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
        self._decoder: EventDecoder | None = None
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
        dialect = dialects.find(dialect_of(url_text(self._request.url))) or dialects.DEFAULT
        ctype = ex.headers.get("content-type", "")
        framing = next((f for f in dialect.framings if f.fits(ctype)), None)
        if response.status == 200 and framing is not None:
            try:
                self._decoder = framing.decoder()
            except UsageError:  # its reader is not installed (botocore): the app reads on
                self._copy = bytearray()
                return
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
                    f"the stream ended without {state.dialect.end_marker}",
                )
            return None
        ex.state = _whole_body_state(body, self.rec.t0)
        return None

    def fail(self, exc: Exception) -> None:
        if self._kept:
            return
        try:
            error = classify(_as_probe(exc), self.rec, request_timeouts(self._request))
        except Exception:
            error = TraceError(ErrorKind.STREAM_BROKEN, self.rec.phase, type(exc).__name__)
        self._keep(error)

    @property
    def kept(self) -> bool:
        """Whether the request was frozen and handed to the sink."""
        return self._kept

    @property
    def concurrency(self) -> int:
        """Requests in flight when this one was sent, itself included."""
        return self._concurrency

    def discard(self) -> None:
        """A request latdoc itself changed and the server refused: kept as nothing (the
        application's own request, sent again in its place among those in flight, is
        kept instead)."""
        self._kept = True

    def abandon(self) -> None:
        """The application closed the response before its end: kept, without an end."""
        self._keep(None)

    def _keep(self, error: TraceError | None) -> None:
        if self._kept:
            return
        body = json_body(self._request)
        trace = freeze_trace(
            self.rec,
            datetime.fromtimestamp(self._started_ns // 1_000_000_000, UTC).replace(
                microsecond=self._started_ns // 1000 % 1_000_000
            ),
            self._exchange,
            error,
            body_size(self._request),
            trace_target(self._request, body),
            started_ns=self._started_ns,
            request_id=request_id(self._request),
        )
        chars, estimated = prompt_size(self._request, body)
        if chars is not None:
            trace = dataclasses.replace(
                trace, prompt_chars=chars, prompt_tokens_estimated=estimated
            )
        self._kept = True
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
