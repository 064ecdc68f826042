"""Each instrumented request as an OpenTelemetry GenAI span and metrics.

Spans and metrics follow the GenAI semantic conventions (span ``chat {model}``
with ``gen_ai.*`` attributes, ``gen_ai.request.stream`` and
``gen_ai.response.time_to_first_chunk`` among them; ``gen_ai.client.operation.duration``,
``gen_ai.client.operation.time_to_first_chunk``,
``gen_ai.client.operation.time_per_output_chunk`` in seconds and
``gen_ai.client.token.usage`` in tokens), and carry latdoc's phases as ``latdoc.*``
attributes in milliseconds. They go through the application's own tracer and
meter providers; ``opentelemetry-api`` is an optional extra.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any
from urllib.parse import urlsplit

from latdoc.errors import UsageError
from latdoc.i18n import N_
from latdoc.probe import dialects
from latdoc.records import RequestTrace

_SCOPE = "latdoc"
_NS_PER_S = 1_000_000_000
_PHASES = (
    "queue",
    "client_delay",
    "dns",
    "connect",
    "tls",
    "send",
    "wait",
    "ttfb",
    "ttft",
    "server_ttft",
    "tpot",
    "total",
    "first_tool_call",
    "tool_arguments_done",
)


def _api() -> tuple[Any, Any]:
    try:
        from opentelemetry import metrics, trace
    except ImportError:
        raise UsageError(
            N_("otel=True needs OpenTelemetry: pip install 'llm-latency-doctor[otel]'")
        ) from None
    return trace, metrics


class GenAiTelemetry:
    """Turns finished traces into GenAI spans and metric points."""

    def __init__(self) -> None:
        trace, metrics = _api()
        from latdoc._version import __version__

        self._trace = trace
        self._tracer = trace.get_tracer(_SCOPE, __version__)
        meter = metrics.get_meter(_SCOPE, __version__)
        self._duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration"
        )
        self._first_chunk = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time to receive the first chunk of a streamed response",
        )
        self._per_chunk = meter.create_histogram(
            "gen_ai.client.operation.time_per_output_chunk",
            unit="s",
            description="Time between consecutive chunks of a streamed response",
        )
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used"
        )

    def record(self, trace: RequestTrace) -> None:
        spec = dialects.find(trace.dialect)
        operation = None if spec is None else spec.otel_operation
        if operation is None:
            return
        common = _common_attributes(trace, operation)
        start = int(trace.started_at.astimezone(UTC).timestamp() * _NS_PER_S)
        end_mark = trace.done_ns or max(
            (c.t_ns for c in trace.chunks), default=trace.first_byte_ns or 0
        )
        attributes = {**common, **_usage_attributes(trace), **_phase_attributes(trace)}
        if trace.error is not None:
            attributes["error.type"] = trace.error.code
        span = self._tracer.start_span(
            f"{operation} {trace.model}".strip(),
            kind=self._trace.SpanKind.CLIENT,
            start_time=start,
            attributes=attributes,
        )
        if trace.error is not None:
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, trace.error.message))
        span.end(end_time=start + end_mark)
        metric_attrs = dict(common)
        if trace.error is not None:
            metric_attrs["error.type"] = trace.error.code
        if trace.total_ms is not None:
            self._duration.record(trace.total_ms / 1000, metric_attrs)
        if trace.ttft_ms is not None:
            self._first_chunk.record(trace.ttft_ms / 1000, metric_attrs)
        for gap in trace.itl_ms:
            self._per_chunk.record(gap / 1000, metric_attrs)
        if trace.prompt_tokens is not None:
            self._tokens.record(trace.prompt_tokens, {**common, "gen_ai.token.type": "input"})
        if trace.output_tokens is not None:
            self._tokens.record(trace.output_tokens, {**common, "gen_ai.token.type": "output"})


def _common_attributes(trace: RequestTrace, operation: str) -> dict[str, Any]:
    parts = urlsplit(trace.url)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.request.model": trace.model,
    }
    if parts.hostname:
        attributes["server.address"] = parts.hostname
    if parts.port is not None:
        attributes["server.port"] = parts.port
    return attributes


def _usage_attributes(trace: RequestTrace) -> dict[str, Any]:
    attributes: dict[str, Any] = {"gen_ai.request.stream": trace.first_event_ns is not None}
    if trace.ttft_ms is not None:
        attributes["gen_ai.response.time_to_first_chunk"] = trace.ttft_ms / 1000
    if trace.prompt_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = trace.prompt_tokens
    if trace.output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = trace.output_tokens
    if trace.finish_reason is not None:
        attributes["gen_ai.response.finish_reasons"] = (trace.finish_reason,)
    return attributes


def _phase_attributes(trace: RequestTrace) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for name in _PHASES:
        value = getattr(trace, f"{name}_ms")
        if value is not None:
            attributes[f"latdoc.{name}_ms"] = round(value, 3)
    if trace.new_connection is not None:
        attributes["latdoc.new_connection"] = trace.new_connection
    if trace.http_version is not None:
        attributes["latdoc.http_version"] = trace.http_version
    attributes["latdoc.chunks"] = len(trace.chunks)
    return attributes
