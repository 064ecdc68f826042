"""GenAI spans from an OTLP JSON file, as traces holding only what the spans hold.

The file is what an OTLP/JSON exporter writes (``resourceSpans[].scopeSpans[].spans[]``,
attributes as key/value lists, times as ``*UnixNano`` strings), one document or one
per line. A span counts when it is a model call as one of the instrumentations
people use writes it:

- the GenAI semantic conventions (``gen_ai.*``), as OpenLLMetry
  (``opentelemetry-instrumentation-openai``), the OpenTelemetry contrib
  ``opentelemetry-instrumentation-openai-v2`` and latdoc itself write them;
- OpenInference (``openinference-instrumentation-openai``): a span of kind ``LLM``
  with ``llm.model_name`` and ``llm.token_count.*``;
- Langfuse: a ``generation`` observation, its usage in
  ``langfuse.observation.usage_details``.

Its trace has the span's start and end, the model, the token usage, the prompt's
size when the span holds the prompt's text (its characters, and the tokens they are
estimated to hold), and the outcome. The time to first token is read where the
instrumentation writes one: latdoc's ``latdoc.ttft_ms``; the conventions'
``gen_ai.response.time_to_first_chunk``; Langfuse's
``langfuse.observation.completion_start_time``; a first-token event (OpenInference's
``First Token Stream Event``); or OpenLLMetry's ``gen_ai.content.completion.chunk``
events, one per streamed chunk, which also give the stream's rhythm (the chunks'
times). Each of these is the first *chunk* the application received: a chunk
without output that a server sends before its prefill (a role-only chunk) would stand
in for the first token, so among chunk events a first one followed by a gap far
longer than the stream's rhythm is taken for such a chunk. latdoc's own ``latdoc.*``
phase attributes are read when latdoc wrote the span. Every other phase is ``None``;
:class:`OtlpTraffic` names the instrumentation that wrote the spans and notes what they
lack beyond that (the network phases are noted wherever traffic is diagnosed,
:mod:`latdoc.analysis.traffic`).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from latdoc.errors import ErrorKind, Phase, TraceError, UsageError
from latdoc.probe import dialects
from latdoc.records import Chunk, RequestTrace, Step, StepNote, estimate_tokens
from latdoc.store._typed import At, decode, parse

_NS_PER_MS = 1_000_000
_MICROSECOND = timedelta(microseconds=1)
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


_CHUNK_EVENT = "gen_ai.content.completion.chunk"
"""OpenLLMetry's event for each streamed chunk (no attributes: its time is all it says)."""
_CONTROL_GAP = 10.0
"""A first chunk event followed by a gap this many times the stream's later median gap
(and of at least :data:`_CONTROL_GAP_MS`) was sent before the prefill: a chunk
without output, such as a role-only chunk."""
_CONTROL_GAP_MS = 5.0
_MIN_RHYTHM = 3
"""Later gaps needed before the first gap is weighed against them."""
_SCOPES = (
    ("opentelemetry.instrumentation.openai", "OpenLLMetry (opentelemetry-instrumentation-openai)"),
    ("opentelemetry.instrumentation.openai_v2", "OpenTelemetry contrib openai-v2"),
    ("opentelemetry.util.genai", "OpenTelemetry GenAI utilities (as openai-v2 writes)"),
    ("openinference.instrumentation", "OpenInference"),
    ("langfuse", "Langfuse"),
    ("latdoc", "latdoc"),
)
"""Instrumentation scope name prefixes (longest first where one holds another), and
what the report calls the instrumentation."""
_PROMPT_TEXT = re.compile(
    r"gen_ai\.prompt\.\d+\.content"
    r"|llm\.input_messages\.\d+\.message\.content"
    r"|llm\.input_messages\.\d+\.message\.contents\.\d+\.message_content\.text"
)
"""Attributes that each hold one message's text (older OpenLLMetry, OpenInference)."""
_PROMPT_JSON = ("gen_ai.input.messages", "langfuse.observation.input")
"""Attributes that hold the prompt's messages as JSON (the conventions, Langfuse)."""


@dataclass(frozen=True)
class OtlpTraffic:
    traces: tuple[RequestTrace, ...]
    notes: tuple[StepNote, ...]
    instrumentation: str = ""
    """What wrote the spans: the instrumentation's name and its scope's version (several,
    most spans first, when several did); the scope's name when latdoc does not know it."""


def read_otlp(text: str, source: str = "OTLP file") -> OtlpTraffic:
    """The GenAI spans of an OTLP JSON document as traces; ``UsageError`` when none, and
    when the document is malformed, naming ``source`` and the place in it."""
    spans = [span for span in _spans(text, source) if _is_genai(span)]
    if not spans:
        raise UsageError(
            f"{source} holds no GenAI spans (spans with gen_ai.* attributes, OpenInference "
            "LLM spans or Langfuse generations)"
        )
    read = sorted((_trace(span) for span in spans), key=lambda r: r.trace.started_at)
    traces = [r.trace for r in read]
    writers = Counter(span.scope for span in spans)
    instrumentation = ", ".join(name for name, _ in writers.most_common())
    return OtlpTraffic(tuple(traces), _notes(read, instrumentation), instrumentation)


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
    """A span object, its attributes read, with where it was found and what wrote it."""

    __slots__ = ("at", "attributes", "places", "scope")

    def __init__(self, at: At, scope: str = "") -> None:
        self.at = at
        self.scope = scope
        self.places = {
            item["key"].text(): item.get("value") for item in at.get("attributes").items()
        }
        self.attributes = {key: _value(value) for key, value in self.places.items()}


def _scope_name(scope: At) -> str:
    """What the report calls the instrumentation an ``InstrumentationScope`` names."""
    if not isinstance(scope.value, dict):
        return "an unnamed instrumentation"
    # Only named in the report: a name or version of another type is no name.
    name, version = scope.value.get("name"), scope.value.get("version")
    name = name if isinstance(name, str) else ""
    version = version if isinstance(version, str) else ""
    known = next((label for prefix, label in _SCOPES if name.startswith(prefix)), None)
    if known is None:
        known = name or "an unnamed instrumentation"
    return f"{known} {version}".strip() if version else known


def _spans(text: str, source: str) -> Iterator[_Span]:
    for document in _documents(text, source):
        if not isinstance(document.value, dict) or "resourceSpans" not in document.value:
            raise UsageError(f"{document.source}: not OTLP JSON (no resourceSpans)")
        for resource_spans in document["resourceSpans"].items():
            resource = resource_spans.get("resource")
            if not resource.missing:
                _Span(resource)
            for scope_spans in resource_spans.get("scopeSpans").items():
                scope = _scope_name(scope_spans.get("scope"))
                for span in scope_spans.get("spans").items():
                    yield _Span(span, scope)


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
    a = span.attributes
    return (
        any(key.startswith("gen_ai.") for key in a)
        or a.get("openinference.span.kind") == "LLM"
        or a.get("langfuse.observation.type") == "generation"
    )


@dataclass(frozen=True)
class _Read:
    """One span's trace, and how its time to first token was read."""

    trace: RequestTrace
    ttft_from: str | None
    """``attribute``, ``event`` or ``chunks`` (OpenLLMetry's chunk events); ``None``."""
    control_chunk: bool = False
    """The first chunk event was taken for a chunk sent before the prefill."""


def _trace(span: _Span) -> _Read:
    a = span.attributes
    start = span.at["startTimeUnixNano"].integer(0)
    end = span.at["endTimeUnixNano"].integer(start)
    operation = str(a.get("gen_ai.operation.name") or "chat")
    phases, ttft_from, control = _phases(span, start, end)
    address, port = a.get("server.address"), a.get("server.port")
    url = f"https://{address}{f':{port}' if port else ''}" if address else "otlp"
    usage = _langfuse_usage(a.get("langfuse.observation.usage_details"))
    prompt = _count(
        span, ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
    )
    output = _count(
        span,
        (
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
        ),
    )
    exact = any(k in a for k in ("gen_ai.usage.output_tokens", "llm.token_count.completion"))
    if prompt is None:
        prompt = usage.get("prompt_tokens", usage.get("input"))
    if output is None:
        output = usage.get("completion_tokens", usage.get("output"))
        exact = exact or output is not None
    chars = _prompt_chars(a)
    trace = RequestTrace(
        started_at=datetime.fromtimestamp(start / 1e9, UTC),
        t0_ns=start,
        url=url,
        model=str(
            a.get("gen_ai.request.model")
            or a.get("gen_ai.response.model")
            or a.get("llm.model_name")
            or a.get("langfuse.observation.model.name")
            or ""
        ),
        dialect=_dialect_of(operation),
        http_version=_str(a.get("latdoc.http_version")),
        new_connection=_bool(a.get("latdoc.new_connection")),
        done_ns=end - start,
        prompt_tokens=prompt,
        output_tokens=output,
        output_tokens_exact=exact,
        finish_reason=_finish(
            a.get("gen_ai.response.finish_reasons") or a.get("llm.finish_reason")
        ),
        error=_error(span),
        prompt_chars=chars,
        prompt_tokens_estimated=None if chars is None else estimate_tokens(chars),
        **phases,
    )
    return _Read(trace, ttft_from, control)


def _count(span: _Span, names: tuple[str, ...]) -> int | None:
    """A token count, from the first of ``names`` the span has: a whole number not below
    0 (a count of another type is not read)."""
    name = next((n for n in names if n in span.attributes), None)
    if name is None:
        return None
    value = _int(span.attributes.get(name))
    if value is not None and value < 0:
        raise span.places[name].fail(f"a token count of {value}")
    return value


def _langfuse_usage(value: Any) -> dict[str, int]:
    """Langfuse's usage details (a JSON object as a string): its whole counts not below 0."""
    obj = _json(value)
    if not isinstance(obj, dict):
        return {}
    return {k: v for k, v in obj.items() if (n := _int(v)) is not None and n >= 0}


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def _prompt_chars(a: dict[str, Any]) -> int | None:
    """Characters of the prompt's text the span holds, where its instrumentation records
    the prompt (content capture on); ``None`` when it holds none."""
    for name in _PROMPT_JSON:
        messages = _json(a.get(name))
        if isinstance(messages, dict):
            messages = messages.get("messages")
        if isinstance(messages, list):
            try:
                return dialects.text_chars(messages)
            except RecursionError:
                return None
    parts = [v for k, v in a.items() if _PROMPT_TEXT.fullmatch(k) and isinstance(v, str)]
    return sum(len(p) for p in parts) if parts else None


def _dialect_of(operation: str) -> str:
    """The first dialect whose spans name ``operation`` (``chat`` for ``chat``,
    ``completions`` for ``text_completion``), else the operation itself."""
    spec = next((d for d in dialects.DIALECTS if d.otel_operation == operation), None)
    return operation if spec is None else spec.name


def _phases(span: _Span, start: int, end: int) -> tuple[dict[str, Any], str | None, bool]:
    """Cumulative marks (ns from the span's start) from latdoc's own attributes, and
    the first token (and chunks) from what other instrumentations write when latdoc did
    not write the span; with where the first token was read from, and whether a first
    chunk event was taken for a chunk sent before the prefill."""

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
    if ttft is not None:
        marks["first_token_ns"] = ttft
        return marks, "attribute", False
    chunks = _chunk_times(span, start, end)
    if chunks:
        control = _sent_before_prefill(chunks)
        marks["first_event_ns"] = chunks[0]
        if control:
            chunks = chunks[1:]
        marks["first_token_ns"] = chunks[0]
        marks["chunks"] = tuple(Chunk(t, 0, 1) for t in chunks)
        return marks, "chunks", control
    first = _first_chunk_attribute(span, start, end)
    source = "attribute"
    if first is None:
        first, source = _first_chunk_event(span, start, end), "event"
    if first is None:
        return marks, None, False
    marks["first_event_ns"] = marks["first_token_ns"] = first
    return marks, source, False


def _chunk_times(span: _Span, start: int, end: int) -> list[int]:
    """The times of OpenLLMetry's chunk events, from the span's start, in order."""
    times = []
    for event in span.at.get("events").items():
        called = event.get("name")
        if not called.missing and called.text() == _CHUNK_EVENT:
            times.append(event["timeUnixNano"].integer(start, end) - start)
    return sorted(times)


def _sent_before_prefill(times: list[int]) -> bool:
    """Whether the first chunk came before a gap far longer than the stream's rhythm."""
    gaps = [b - a for a, b in itertools.pairwise(times)]
    if len(gaps) < 1 + _MIN_RHYTHM:
        return False
    rhythm = statistics.median(gaps[1:])
    return gaps[0] >= max(_CONTROL_GAP * rhythm, _CONTROL_GAP_MS * _NS_PER_MS)


def _first_chunk_attribute(span: _Span, start: int, end: int) -> int | None:
    """The first chunk's time from an attribute: the conventions' time to first chunk (in
    seconds), or Langfuse's completion start (an ISO 8601 time, JSON-quoted as its SDK
    writes it); ``None`` when absent or outside the span."""
    a = span.attributes
    seconds = a.get("gen_ai.response.time_to_first_chunk")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool):
        if not (math.isfinite(seconds) and 0 <= seconds <= (end - start) / 1e9):
            return None
        return round(seconds * 1e9)
    stamp = a.get("langfuse.observation.completion_start_time")
    if not isinstance(stamp, str):
        return None
    text = stamp.strip().strip('"').replace("Z", "+00:00")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    at = (when - epoch) // _MICROSECOND * 1000 - start
    # The SDK stamps microseconds: a first chunk within one of the start is at the start.
    if -1000 < at < 0:
        at = 0
    return at if 0 <= at <= end - start else None


def _first_chunk_event(span: _Span, start: int, end: int) -> int | None:
    """The time of a first-token or first-chunk event (``First Token Stream Event``,
    ``first_token``, ``gen_ai.first_chunk`` …), from the span's start."""
    for event in span.at.get("events").items():
        called = event.get("name")
        text = "" if called.missing else called.text().lower().replace(" ", "_")
        if "first_token" in text or "first_chunk" in text:
            return event["timeUnixNano"].integer(start, end) - start
    return None


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


def _notes(read: list[_Read], instrumentation: str) -> tuple[StepNote, ...]:
    traces = [r.trace for r in read]
    notes = []
    ok = [r for r in read if r.trace.ok]
    timed = [r for r in ok if r.trace.first_token_ns is not None]
    if timed:
        from_chunks = sum(1 for r in timed if r.ttft_from == "chunks")
        control = sum(1 for r in timed if r.control_chunk)
        text = (
            f"the spans were written by {instrumentation}; the time to first token of "
            f"{len(timed)} of {len(ok)} successful spans is the first streamed chunk the "
            "instrumentation recorded, which a chunk without output sent before the "
            "prefill would stand in for"
        )
        if control:
            text += (
                f" (in {control} of the {from_chunks} spans with a time for every chunk, "
                "the first chunk came long before the stream's rhythm began and is taken "
                "for such a chunk: their first token is the chunk after it)"
            )
        notes.append(StepNote(Step.RUN, text))
    else:
        notes.append(StepNote(Step.RUN, f"the spans were written by {instrumentation}"))
    no_ttft = len(ok) - len(timed)
    if no_ttft:
        notes.append(
            StepNote(
                Step.LOAD,
                f"{no_ttft} of {len(ok)} successful spans carry no time to first chunk: "
                "prefill and queueing cannot be told from generation in them",
            )
        )
    no_chunks = sum(1 for t in traces if t.ok and not t.chunks)
    if no_chunks:
        notes.append(
            StepNote(
                Step.RUN,
                f"{no_chunks} of {len(ok)} successful spans hold no chunk times: the "
                "stream's rhythm (time per token, mid-stream stalls) cannot be judged from "
                "them",
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
