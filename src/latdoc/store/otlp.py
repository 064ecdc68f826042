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

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from latdoc.errors import ErrorKind, Phase, TraceError, UsageError
from latdoc.probe import dialects
from latdoc.records import RequestTrace, Step, StepNote
from latdoc.store._typed import At, decode, parse

_NS_PER_MS = 1_000_000
_MAX_MS = 1e12
"""The longest phase a ``latdoc.*_ms`` attribute may give (about 31 years)."""
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


__all__ = ["OtlpTraffic", "decode", "read_otlp"]


@dataclass(frozen=True)
class OtlpTraffic:
    traces: tuple[RequestTrace, ...]
    notes: tuple[StepNote, ...]


def read_otlp(text: str, source: str = "OTLP file") -> OtlpTraffic:
    """The GenAI spans of an OTLP JSON document as traces; ``UsageError`` when none, and
    when the document is malformed, naming ``source`` and the place in it."""
    traces = [_trace(span) for span in _spans(text, source) if _is_genai(span)]
    if not traces:
        raise UsageError(f"{source} holds no GenAI spans (spans with gen_ai.* attributes)")
    traces.sort(key=lambda t: t.started_at)
    return OtlpTraffic(tuple(traces), _notes(traces))


def _documents(text: str, source: str) -> Iterator[At]:
    """The one document ``text`` holds, or one per line when its first line is one."""
    try:
        yield At(parse(text, source), source)
        return
    except ValueError as whole:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        try:
            first = parse(lines[0][1], source) if len(lines) > 1 else None
        except ValueError:
            first = None
        if not isinstance(first, dict):
            raise UsageError(f"{source}: not JSON ({whole})") from None
    for number, line in lines:
        try:
            yield At(parse(line, source), f"{source}:{number}")
        except ValueError as exc:
            raise UsageError(f"{source}:{number}: not JSON ({exc})") from None


class _Span:
    """A span object, its attributes read, with where it was found."""

    __slots__ = ("at", "attributes", "places")

    def __init__(self, at: At) -> None:
        self.at = at
        self.places = {
            item["key"].text(): item.get("value") for item in at.get("attributes").items()
        }
        self.attributes = {key: _value(value) for key, value in self.places.items()}


def _spans(text: str, source: str) -> Iterator[_Span]:
    for document in _documents(text, source):
        if not isinstance(document.value, dict) or "resourceSpans" not in document.value:
            raise UsageError(f"{document.source}: not OTLP JSON (no resourceSpans)")
        for resource_spans in document["resourceSpans"].items():
            resource = resource_spans.get("resource")
            if not resource.missing:
                _Span(resource)
            for scope_spans in resource_spans.get("scopeSpans").items():
                for span in scope_spans.get("spans").items():
                    yield _Span(span)


def _value(raw: At) -> Any:
    """An ``AnyValue``: its string, whole number, double, boolean or array (``None`` for
    the kinds latdoc does not read: ``kvlistValue``, ``bytesValue``, an empty value)."""
    if raw.missing:
        return None
    if raw.has("stringValue"):
        return raw["stringValue"].text()
    if raw.has("intValue"):
        return raw["intValue"].integer()
    if raw.has("doubleValue"):
        return raw["doubleValue"].number(finite=False)
    if raw.has("boolValue"):
        return raw["boolValue"].boolean()
    if raw.has("arrayValue"):
        return [_value(v) for v in raw["arrayValue"].get("values").items()]
    return None


def _is_genai(span: _Span) -> bool:
    return any(key.startswith("gen_ai.") for key in span.attributes)


def _trace(span: _Span) -> RequestTrace:
    a = span.attributes
    start = span.at["startTimeUnixNano"].integer(0)
    end = span.at["endTimeUnixNano"].integer(start)
    operation = str(a.get("gen_ai.operation.name") or "chat")
    phases = _phases(span, start, end)
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
        prompt_tokens=_count(span, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        output_tokens=_count(span, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        output_tokens_exact="gen_ai.usage.output_tokens" in a,
        finish_reason=_finish(a.get("gen_ai.response.finish_reasons")),
        error=_error(span),
        **phases,
    )


def _count(span: _Span, key: str, older: str) -> int | None:
    """A token count: a whole number not below 0 (a count of another type is not read)."""
    name = key if key in span.attributes else older
    value = _int(span.attributes.get(name))
    if value is not None and value < 0:
        raise span.places[name].fail(f"a token count of {value}")
    return value


def _dialect_of(operation: str) -> str:
    """The first dialect whose spans name ``operation`` (``chat`` for ``chat``,
    ``completions`` for ``text_completion``), else the operation itself."""
    spec = next((d for d in dialects.DIALECTS if d.otel_operation == operation), None)
    return operation if spec is None else spec.name


def _phases(span: _Span, start: int, end: int) -> dict[str, Any]:
    """Cumulative marks (ns from the span's start) from latdoc's own attributes, and
    the first token from a first-chunk event when latdoc did not write the span."""

    def ns(name: str) -> int | None:
        key = f"latdoc.{name}_ms"
        value = span.attributes.get(key)
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        if not 0 <= value <= _MAX_MS:
            raise span.places[key].fail(f"{value} ms is not a duration")
        return round(value * _NS_PER_MS)

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
        for event in span.at.get("events").items():
            called = event.get("name")
            text = "" if called.missing else called.text()
            if "first_token" in text or "first_chunk" in text:
                ttft = event["timeUnixNano"].integer(start, end) - start
                break
    if ttft is not None:
        marks["first_token_ns"] = ttft
    return marks


def _error(span: _Span) -> TraceError | None:
    a = span.attributes
    status = span.at.get("status")
    code_at = status.get("code") if not status.missing else status
    kind = a.get("error.type")
    if kind is None and code_at.value not in _STATUS_ERROR:
        return None
    text = str(kind or "error")
    message_at = status.get("message") if not status.missing else status
    message = (None if message_at.missing else message_at.text()) or text
    code = _int(a.get("http.response.status_code"))
    if code is None:
        digits = text.removeprefix("http:")
        code = (
            int(digits)
            if digits.isascii() and digits.isdigit() and len(digits) <= 3
            else _SDK_ERRORS.get(text.rsplit(".", 1)[-1])
        )
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
