"""The events of one streamed answer: reasoning first, then the answer.

A :class:`StreamWriter` turns output token ``k`` (of the call's reasoning tokens, then
its answer tokens) into the bytes of its event(s), so the schedule in
:mod:`latdoc.lab.sim._serve` is the same whatever the API; each API's stand-in
(:mod:`latdoc.lab.sim.dialects`) makes its own. :class:`ChatWriter` writes OpenAI's
chunks for chat and completions, reasoning as ``delta.reasoning_content`` (or as
answer text between ``<think>`` tags), a tool call as ``delta.tool_calls``.

A server that writes several tokens per event (``LabConfig.tokens_per_event``) asks
for :meth:`StreamWriter.tokens`: chat and completions carry them in one chunk, their
texts joined; the other APIs' stand-ins write each token's event(s) in one write
(:func:`each_token`).

A tool call's arguments are ``{"words": "<the answer's words>"}``, one word a token.
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

from latdoc.lab.sim._call import Call
from latdoc.lab.sim._events import (
    DONE,
    Events,
    Fragments,
    answer_token,
    arguments,
    output_token,
)

__all__ = ["ChatWriter", "StreamWriter", "each_token"]


class StreamWriter(Protocol):
    def opening(self) -> bytes:
        """Events sent with the headers (may be empty)."""
        ...

    def token(self, k: int) -> bytes:
        """The event(s) of output token ``k``: reasoning below ``reasoning_tokens``."""
        ...

    def tokens(self, first: int, count: int) -> bytes:
        """The event(s) of ``count`` output tokens from ``first``, written at once: all
        reasoning or all answer (the server cuts its events where the answer starts)."""
        ...

    def closing(self, usage: dict[str, Any], truth: dict[str, Any] | None) -> list[bytes]:
        """The events after the last token, each its own write; the last ends the body."""
        ...

    def malformed(self) -> bytes:
        """An event whose data is cut off mid-object: not valid JSON."""
        ...

    def overloaded(self) -> bytes:
        """An ``overloaded_error`` event, the last of the stream."""
        ...


class ChatWriter:
    """OpenAI chat completions and completions chunks: ``fragments`` are the API's
    pieces, ``obj`` its ``object`` (``chat.completion.chunk``, ``text_completion``)."""

    def __init__(
        self, call: Call, call_id: str, stamp: bool, fragments: Fragments, obj: str
    ) -> None:
        self.call = call
        self.call_id = call_id
        self.fragments = fragments
        self.events = Events(call_id, obj, int(time.time()), call.model, stamp)
        self.told: dict[str, Any] = {}
        """Fields the last event carries beside ``lab``: the server's own timing as it
        words it (:func:`~latdoc.lab.sim._plan.told_timing`)."""
        self.usage_in_choice = False
        """The usage goes in ``choices[0].usage`` of the finishing chunk, as Moonshot's
        does (:class:`~latdoc.lab.sim.UsageShape`), not in a chunk of its own."""

    def opening(self) -> bytes:
        role = self.fragments.role
        return b"" if role is None else self.events.body(role)

    def token(self, k: int) -> bytes:
        call = self.call
        thinking = call.reasoning_tokens
        if k < thinking:
            return self._reasoning(k, k + 1)
        k -= thinking
        if call.tool_name is None and call.answer is not None:
            return self.events.body(self.fragments.text(call.answer[k]))
        if call.tool_name is None:
            tokens = self.fragments.tokens
            return self.events.body(tokens[k % len(tokens)])
        function: dict[str, Any] = {"arguments": arguments(call, k)}
        tool: dict[str, Any] = {"index": 0, "function": function}
        if k == 0:
            tool.update(id="call_lab", type="function")
            function["name"] = call.tool_name
        return self.events.body(_chat_choice({"tool_calls": [tool]}))

    def tokens(self, first: int, count: int) -> bytes:
        if count == 1:
            return self.token(first)
        call = self.call
        thinking = call.reasoning_tokens
        ks = range(first, first + count)
        if first < thinking:
            return self._reasoning(first, first + count)
        ks = range(first - thinking, first - thinking + count)
        if call.tool_name is None:
            text = "".join(answer_token(call, k) for k in ks)
            return self.events.body(self.fragments.text(text))
        function: dict[str, Any] = {"arguments": "".join(arguments(call, k) for k in ks)}
        tool: dict[str, Any] = {"index": 0, "function": function}
        if ks[0] == 0:
            tool.update(id="call_lab", type="function")
            function["name"] = call.tool_name
        return self.events.body(_chat_choice({"tool_calls": [tool]}))

    def _reasoning(self, first: int, stop: int) -> bytes:
        """The event of reasoning tokens ``first`` to ``stop``: ``reasoning_content``, or
        answer text between ``<think>`` tags where the call writes it so."""
        call = self.call
        text = "".join(output_token(k) for k in range(first, stop))
        if not call.reasoning_in_text:
            return self.events.body(_chat_choice({"reasoning_content": text}))
        opening = "<think>" if first == 0 else ""
        closing = "</think>\n\n" if stop == call.reasoning_tokens else ""
        return self.events.body(self.fragments.text(opening + text + closing))

    def closing(self, usage: dict[str, Any], truth: dict[str, Any] | None) -> list[bytes]:
        call = self.call
        told = {**self.told, **({"lab": truth} if truth else {})}
        lab = b"".join(
            b',"%s":%s' % (key.encode(), json.dumps(value, separators=(",", ":")).encode())
            for key, value in told.items()
        )
        if call.tool_name is not None and call.finish_reason == "stop":
            finish = b'[{"index":0,"delta":{},"finish_reason":"tool_calls"}]'
        else:
            finish = self.fragments.finish(call.finish_reason)
        if call.include_usage:
            if call.reasoning_tokens:
                usage = {
                    **usage,
                    "completion_tokens_details": {"reasoning_tokens": call.reasoning_tokens},
                }
            said = json.dumps(usage, separators=(",", ":")).encode()
            if self.usage_in_choice:
                return [self.events.body(finish[:-2] + b',"usage":%s}]' % said, lab), DONE]
            tail = b'[],"usage":%s' % said
            return [self.events.body(finish), self.events.body(tail, lab), DONE]
        return [self.events.body(finish, lab), DONE]

    def malformed(self) -> bytes:
        return self.events.malformed_body()

    def overloaded(self) -> bytes:
        error = {"message": "Overloaded", "type": "overloaded_error", "code": "overloaded_error"}
        return b"data: %s\n\n" % json.dumps({"error": error}).encode()


def each_token(writer: StreamWriter, first: int, count: int) -> bytes:
    """``count`` tokens from ``first`` as each token's own event(s), in one write."""
    return b"".join(writer.token(k) for k in range(first, first + count))


def _chat_choice(delta: dict[str, Any]) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": None}
    return json.dumps([choice], separators=(",", ":")).encode()
