"""What has been read of one streamed response: chunks, first token, usage, finish."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from latdoc.errors import ErrorKind, Phase, StreamFailure, TraceError
from latdoc.probe import dialects
from latdoc.probe._events import EventInfo, Usage, merge_usage
from latdoc.probe._recorder import Recorder
from latdoc.probe._sse import SSEEvent
from latdoc.probe._think import ThinkTags
from latdoc.probe.dialects import DialectSpec
from latdoc.records import Chunk

EventHook = Callable[[Any, int], None]
"""Called with each decoded JSON event and its arrival (absolute ``perf_counter_ns``)."""
InfoHook = Callable[[EventInfo, int], None]
"""Called with each event as the dialect read it (its output, reasoning first, and its
tool calls' parts) and its arrival."""


@dataclass
class StreamState:
    """What has been read of one response so far."""

    t0: int
    count_tokens: Callable[[str], int] | None
    on_json: EventHook | None = None
    dialect: DialectSpec = dialects.DEFAULT
    chunks: list[Chunk] = field(default_factory=list)
    on_info: InfoHook | None = None
    first_event: int | None = None
    """The first event of any kind, a control event or ``[DONE]`` as much as output."""
    first_token: int | None = None
    """The first output of any kind: reasoning, answer text or a tool call."""
    first_reasoning: int | None = None
    first_answer: int | None = None
    first_tool_call: int | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    usage_on_chunks: bool = False
    done_marker: bool = False
    """``[DONE]``, or the dialect's own end (``message_stop``, ``response.completed``)."""
    unknown_events: int = 0
    """Events of a type the dialect does not define, skipped."""
    server_timing: dict[str, float] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)
    response_id: str | None = None
    """The id the response's events give it (``chatcmpl-…``, ``msg_…``, ``resp_…``)."""
    tool_calls: dict[object, list[Any]] = field(default_factory=dict)
    """Each tool call read so far, by its place in the response: ``[name, argument
    characters, first part, arguments' last byte]`` (absolute ``perf_counter_ns``)."""
    _last_completion_tokens: int = 0
    _last_reasoning_tokens: int = 0
    _think: ThinkTags | None = field(default_factory=ThinkTags, repr=False)
    """Reads thinking written into the answer between tags (:mod:`._think`); ``None``
    once the answer has begun, or opened no tag."""
    _foreign: Callable[[dict[str, Any], str | None], str | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        spec = self.dialect
        self._foreign = lambda obj, event: dialects.other_dialect(obj, event, spec)

    def on_event(self, event: SSEEvent, phase_of: Recorder) -> None:
        if self.first_event is None:
            self.first_event = event.t_ns
        data = event.data
        if data.strip() == "[DONE]":
            self.done_marker = True
            return
        try:
            obj = _loads(data)
        except ValueError:
            raise StreamFailure(
                TraceError(
                    ErrorKind.MALFORMED,
                    phase_of.phase,
                    f"event is not valid JSON: {data[:80]!r}",
                )
            ) from None
        if self.on_json is not None:
            self.on_json(obj, event.t_ns)
        info = self.dialect.parse(obj, event.event, self._foreign)
        if self.response_id is None and info.response_id is not None:
            self.response_id = info.response_id
        if info.error is not None:
            raise StreamFailure(
                TraceError(
                    ErrorKind.HTTP, phase_of.phase, f"error event: {info.error}", info.error_status
                )
            )
        if info.other_dialect is not None and self.first_token is None:
            raise StreamFailure(
                TraceError(
                    ErrorKind.MALFORMED,
                    phase_of.phase,
                    f"the endpoint answers in the {info.other_dialect} dialect "
                    f"({_event_type(obj, event)} events), not {self.dialect.name}: "
                    f"try --api {info.other_dialect}",
                )
            )
        if info.unknown:
            self.unknown_events += 1
            return
        if self._think is not None and info.output_chars:
            info = self._thought(info, self._think)
        if self.on_info is not None:
            self.on_info(info, event.t_ns)
        self._apply(info, event.t_ns, phase_of)

    def _thought(self, info: EventInfo, think: ThinkTags) -> EventInfo:
        """``info`` with the thinking its answer text holds told as reasoning. An event
        that carries reasoning or a tool call beside its text is read as it comes."""
        if info.reasoning_chars or info.tool_chars or len(info.text) != info.output_chars:
            return info
        thought, answer, opened = think.split(info.text)
        if think.done:
            self._think = None
        if opened and self.first_tool_call is None:
            # The events before were the opening tag's start, counted as answer.
            if self.first_reasoning is None:
                self.first_reasoning = self.first_answer
            self.first_answer = None
        if not thought:
            return info
        return info._replace(output_chars=answer, reasoning_chars=thought)

    def _apply(self, info: EventInfo, t_ns: int, rec: Recorder) -> None:
        if info.tool_parts:
            self._tool_parts(info, t_ns)
        if info.finish_reason is not None:
            # A stream that called a tool and stopped by itself ended for the call (Gemini
            # says STOP, some engines ``stop``): one finish reason for it in every dialect.
            called = info.finish_reason == "stop" and self.tool_calls
            self.finish_reason = "tool_calls" if called else info.finish_reason
        if info.ends_stream:
            self.done_marker = True
        if info.server_timing:
            self.server_timing.update(info.server_timing)
        chars = info.output_chars + info.reasoning_chars
        tokens = 1
        if info.usage is not None:
            self.usage = merge_usage(self.usage, info.usage)
            completed = info.usage.completion_tokens
            if chars and completed is not None:
                self.usage_on_chunks = True
                tokens = max(0, completed - self._last_completion_tokens - self._hidden(info))
                self._last_completion_tokens = completed
        if chars:
            if self.first_token is None:
                self.first_token = t_ns
                rec.phase = Phase.STREAM
            if info.reasoning_chars and self.first_reasoning is None:
                self.first_reasoning = t_ns
            if info.output_chars and self.first_answer is None:
                self.first_answer = t_ns
            if info.tool_chars and self.first_tool_call is None:
                self.first_tool_call = t_ns
            self.chunks.append(Chunk(t_ns - self.t0, chars, tokens))
            if self.count_tokens is not None:
                self.text.append(info.text)

    def _tool_parts(self, info: EventInfo, t_ns: int) -> None:
        calls = self.tool_calls
        for part in info.tool_parts:
            key: object = part.place if part.place is not None else ("whole", len(calls))
            call = calls.get(key)
            if call is None:
                calls[key] = call = [part.name, 0, t_ns, t_ns]
            elif call[0] is None:
                call[0] = part.name
            if part.argument_chars:
                call[1] += part.argument_chars
                call[3] = t_ns

    def _hidden(self, info: EventInfo) -> int:
        """Reasoning tokens the usage counted since the last chunk that streamed none of
        them (Gemini's thinking without thought parts): the model's time before this
        chunk, not tokens of the chunk."""
        reasoned = info.usage.reasoning_tokens if info.usage is not None else None
        if reasoned is None:
            return 0
        grown = max(0, reasoned - self._last_reasoning_tokens)
        self._last_reasoning_tokens = max(reasoned, self._last_reasoning_tokens)
        return 0 if info.reasoning_chars else grown


def _loads(data: str) -> Any:
    """One event's JSON: orjson's reading (a quarter of the standard library's time,
    the largest part of an event's decoding at hundreds of streams), else the standard
    library's, which also takes what orjson refuses (``NaN``, a number past a double's
    range, a lone surrogate escaped) and raises ``ValueError`` on what is not JSON at
    all."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def _event_type(obj: Any, event: Any) -> str:
    kind = (obj.get("type") or obj.get("object")) if isinstance(obj, dict) else None
    return str(kind or getattr(event, "event", None) or "unnamed")
