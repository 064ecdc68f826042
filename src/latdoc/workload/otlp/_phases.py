"""When a span's first token and chunks came: latdoc's own phase attributes, else what
other instrumentations write (a time to first chunk, a first-token event, one event
per streamed chunk), a first chunk sent before the prefill told apart."""

from __future__ import annotations

import itertools
import math
import statistics
from datetime import UTC, datetime, timedelta
from typing import Any

from latdoc.records import Chunk
from latdoc.workload.otlp._spans import Span

_NS_PER_MS = 1_000_000
_MICROSECOND = timedelta(microseconds=1)
_MAX_MS = 1e12
"""The longest phase a ``latdoc.*_ms`` attribute may give (about 31 years)."""
_CHUNK_EVENT = "gen_ai.content.completion.chunk"
"""OpenLLMetry's event for each streamed chunk (no attributes: its time is all it says)."""
_CONTROL_GAP = 10.0
"""A first chunk event followed by a gap this many times the stream's later median gap
(and of at least :data:`_CONTROL_GAP_MS`) was sent before the prefill: a chunk
without output, such as a role-only chunk."""
_CONTROL_GAP_MS = 5.0
_MIN_RHYTHM = 3
"""Later gaps needed before the first gap is weighed against them."""


def phases(span: Span, start: int, end: int) -> tuple[dict[str, Any], str | None, bool]:
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
    tool = ns("first_tool_call")
    if tool is not None:
        marks["first_tool_call_ns"] = tool
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


def _chunk_times(span: Span, start: int, end: int) -> list[int]:
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


def _first_chunk_attribute(span: Span, start: int, end: int) -> int | None:
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


def _first_chunk_event(span: Span, start: int, end: int) -> int | None:
    """The time of a first-token or first-chunk event (``First Token Stream Event``,
    ``first_token``, ``gen_ai.first_chunk`` …), from the span's start."""
    for event in span.at.get("events").items():
        called = event.get("name")
        text = "" if called.missing else called.text().lower().replace(" ", "_")
        if "first_token" in text or "first_chunk" in text:
            return event["timeUnixNano"].integer(start, end) - start
    return None
