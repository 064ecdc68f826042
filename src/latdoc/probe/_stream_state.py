"""What has been read of one streamed response: chunks, first token, usage, finish."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from latdoc.errors import ErrorKind, Phase, StreamFailure, TraceError
from latdoc.probe._dialects import EventInfo, Usage, parse_event
from latdoc.probe._recorder import Recorder
from latdoc.probe._sse import SSEEvent
from latdoc.records import Chunk

EventHook = Callable[[Any, int], None]
"""Called with each decoded JSON event and its arrival (absolute ``perf_counter_ns``)."""


@dataclass
class StreamState:
    """What has been read of one response so far."""

    t0: int
    count_tokens: Callable[[str], int] | None
    on_json: EventHook | None = None
    chunks: list[Chunk] = field(default_factory=list)
    first_token: int | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    usage_on_chunks: bool = False
    done_marker: bool = False
    server_timing: dict[str, float] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)
    response_id: str | None = None
    """The ``id`` of the response's events (OpenAI's ``chatcmpl-…``), from the first with one."""
    _last_completion_tokens: int = 0

    def on_event(self, event: SSEEvent, phase_of: Recorder) -> None:
        data = event.data
        if data.strip() == "[DONE]":
            self.done_marker = True
            return
        try:
            obj = json.loads(data)
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
        if self.response_id is None and isinstance(obj, dict) and isinstance(obj.get("id"), str):
            self.response_id = obj["id"]
        info = parse_event(obj)
        if info.error is not None:
            raise StreamFailure(
                TraceError(ErrorKind.HTTP, phase_of.phase, f"error event: {info.error}")
            )
        self._apply(info, event.t_ns, obj, phase_of)

    def _apply(self, info: EventInfo, t_ns: int, obj: Any, rec: Recorder) -> None:
        if info.finish_reason is not None:
            self.finish_reason = info.finish_reason
        if info.server_timing:
            self.server_timing.update(info.server_timing)
        tokens = 1
        if info.usage is not None:
            self.usage = info.usage
            completed = info.usage.completion_tokens
            if info.output_chars and completed is not None:
                self.usage_on_chunks = True
                tokens = max(0, completed - self._last_completion_tokens)
                self._last_completion_tokens = completed
        if info.output_chars:
            if self.first_token is None:
                self.first_token = t_ns
                rec.phase = Phase.STREAM
            self.chunks.append(Chunk(t_ns - self.t0, info.output_chars, tokens))
            if self.count_tokens is not None:
                self.text.append(_output_text(obj))


def _output_text(obj: Any) -> str:
    parts: list[str] = []
    for choice in obj.get("choices") or ():
        delta = choice.get("delta") or {}
        for key in ("content", "reasoning_content", "reasoning"):
            value = delta.get(key)
            if isinstance(value, str):
                parts.append(value)
        if isinstance(choice.get("text"), str):
            parts.append(choice["text"])
    return "".join(parts)
