"""GenAI spans from an OTLP JSON file, as traces holding only what the spans hold.

The file is what an OTLP/JSON exporter writes (``resourceSpans[].scopeSpans[].spans[]``,
attributes as key/value lists, times as ``*UnixNano`` strings), one document or one
per line. A span counts when it has ``gen_ai.*`` attributes (the GenAI semantic
conventions, as the OpenTelemetry openai instrumentation writes them). Its trace
has the span's start and end, the model, the token usage and the outcome; the
time to first token only when the span carries one (``latdoc.ttft_ms`` or a
``first_token``/``first_chunk`` event); latdoc's own ``latdoc.*`` phase attributes
when latdoc wrote the span. Every other phase is ``None``; :class:`OtlpTraffic`
notes name what spans lack beyond that (the network phases are noted wherever
traffic is diagnosed, :mod:`latdoc.analysis.traffic`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from latdoc.errors import ErrorKind, Phase, TraceError, UsageError
from latdoc.probe import dialects
from latdoc.records import RequestTrace, Step, StepNote

_NS_PER_MS = 1_000_000
_STATUS_ERROR = (2, "STATUS_CODE_ERROR")
_SDK_ERRORS = {
    "RateLimitError": 429,
    "InternalServerError": 500,
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "UnprocessableEntityError": 422,
}
"""The openai SDK's exception names (``error.type`` in its instrumentation) by status."""


@dataclass(frozen=True)
class OtlpTraffic:
    traces: tuple[RequestTrace, ...]
    notes: tuple[StepNote, ...]


def read_otlp(text: str, source: str = "OTLP file") -> OtlpTraffic:
    """The GenAI spans of an OTLP JSON document as traces; ``UsageError`` when none."""
    traces = [_trace(span) for span in _spans(text, source) if _is_genai(span)]
    if not traces:
        raise UsageError(f"{source} holds no GenAI spans (spans with gen_ai.* attributes)")
    traces.sort(key=lambda t: t.started_at)
    return OtlpTraffic(tuple(traces), _notes(traces))


def _documents(text: str, source: str) -> Iterator[Any]:
    try:
        yield json.loads(text)
        return
    except ValueError:
        pass
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield json.loads(line)
            except ValueError:
                raise UsageError(f"{source}:{number}: not OTLP JSON") from None


def _spans(text: str, source: str) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for document in _documents(text, source):
        if not isinstance(document, dict) or "resourceSpans" not in document:
            raise UsageError(f"{source}: not OTLP JSON (no resourceSpans)")
        for resource_spans in document["resourceSpans"] or ():
            resource = _attributes((resource_spans.get("resource") or {}).get("attributes"))
            for scope_spans in resource_spans.get("scopeSpans") or ():
                for span in scope_spans.get("spans") or ():
                    yield span, resource


def _value(raw: Any) -> Any:
    if not isinstance(raw, dict):
        return None
    if "stringValue" in raw:
        return raw["stringValue"]
    if "intValue" in raw:
        return int(raw["intValue"])
    if "doubleValue" in raw:
        return float(raw["doubleValue"])
    if "boolValue" in raw:
        return bool(raw["boolValue"])
    if "arrayValue" in raw:
        return [_value(v) for v in (raw["arrayValue"].get("values") or ())]
    return None


def _attributes(raw: Any) -> dict[str, Any]:
    return {
        item["key"]: _value(item.get("value"))
        for item in raw or ()
        if isinstance(item, dict) and "key" in item
    }


def _is_genai(item: tuple[dict[str, Any], dict[str, Any]]) -> bool:
    attributes = _attributes(item[0].get("attributes"))
    return any(key.startswith("gen_ai.") for key in attributes)


def _trace(item: tuple[dict[str, Any], dict[str, Any]]) -> RequestTrace:
    span, _resource = item
    a = _attributes(span.get("attributes"))
    start = int(span["startTimeUnixNano"])
    end = int(span["endTimeUnixNano"])
    operation = str(a.get("gen_ai.operation.name") or "chat")
    phases = _phases(a, span, start)
    address, port = a.get("server.address"), a.get("server.port")
    url = f"https://{address}{f':{port}' if port else ''}" if address else "otlp"
    return RequestTrace(
        started_at=datetime.fromtimestamp(start / 1e9, UTC),
        t0_ns=start,
        url=url,
        model=str(a.get("gen_ai.request.model") or a.get("gen_ai.response.model") or ""),
        dialect=_dialect_of(operation),
        http_version=_str(a.get("latdoc.http_version")),
        new_connection=_bool(a.get("latdoc.new_connection")),
        done_ns=end - start,
        prompt_tokens=_int(a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens"))),
        output_tokens=_int(
            a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens"))
        ),
        output_tokens_exact="gen_ai.usage.output_tokens" in a,
        finish_reason=_finish(a.get("gen_ai.response.finish_reasons")),
        error=_error(span, a),
        **phases,
    )


def _dialect_of(operation: str) -> str:
    """The first dialect whose spans name ``operation`` (``chat`` for ``chat``,
    ``completions`` for ``text_completion``), else the operation itself."""
    spec = next((d for d in dialects.DIALECTS if d.otel_operation == operation), None)
    return operation if spec is None else spec.name


def _phases(a: Mapping[str, Any], span: Mapping[str, Any], start: int) -> dict[str, Any]:
    """Cumulative marks (ns from the span's start) from latdoc's own attributes, and
    the first token from a first-chunk event when latdoc did not write the span."""

    def ns(name: str) -> int | None:
        value = a.get(f"latdoc.{name}_ms")
        return None if not isinstance(value, int | float) else round(value * _NS_PER_MS)

    marks: dict[str, Any] = {}
    cumulative = 0
    for name, field in (("queue", "queue_done_ns"), ("dns", "dns_done_ns"),
                        ("connect", "connect_done_ns"), ("tls", "tls_done_ns")):  # fmt: skip
        step = ns(name)
        if step is None:
            break
        cumulative += step
        marks[field] = cumulative
    ttfb, wait, ttft = ns("ttfb"), ns("wait"), ns("ttft")
    if ttfb is not None:
        marks["first_byte_ns"] = ttfb
        if wait is not None:
            marks["sent_ns"] = ttfb - wait
    if ttft is None:
        for event in span.get("events") or ():
            name = str(event.get("name", ""))
            if "first_token" in name or "first_chunk" in name:
                ttft = int(event["timeUnixNano"]) - start
                break
    if ttft is not None:
        marks["first_token_ns"] = ttft
    return marks


def _error(span: Mapping[str, Any], a: Mapping[str, Any]) -> TraceError | None:
    status = span.get("status") or {}
    kind = a.get("error.type")
    if kind is None and status.get("code") not in _STATUS_ERROR:
        return None
    text = str(kind or "error")
    message = str(status.get("message") or text)
    code = _int(a.get("http.response.status_code"))
    if code is None:
        digits = text.removeprefix("http:")
        code = int(digits) if digits.isdigit() else _SDK_ERRORS.get(text.rsplit(".", 1)[-1])
    lowered = text.lower()
    if "timeout" in lowered:
        return TraceError(ErrorKind.TIMEOUT, Phase.WAIT, message)
    if "connect" in lowered:
        return TraceError(ErrorKind.CONNECT, Phase.CONNECT, message)
    return TraceError(ErrorKind.HTTP, Phase.WAIT, message, code)


def _notes(traces: list[RequestTrace]) -> tuple[StepNote, ...]:
    notes = []
    ok = sum(1 for t in traces if t.ok)
    no_ttft = sum(1 for t in traces if t.ok and t.first_token_ns is None)
    if no_ttft:
        notes.append(
            StepNote(
                Step.LOAD,
                f"{no_ttft} of {ok} successful spans carry no time to first chunk: prefill and "
                "queueing cannot be told from generation in them",
            )
        )
    notes.append(
        StepNote(
            Step.RUN,
            "spans hold no chunk times: the stream's rhythm (time per token, mid-stream "
            "stalls) cannot be judged",
        )
    )
    return tuple(notes)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _finish(value: Any) -> str | None:
    if isinstance(value, list) and value and isinstance(value[0], str):
        return value[0]
    return value if isinstance(value, str) else None
