"""The events of one streamed answer in each dialect: reasoning first, then the answer.

A :class:`StreamWriter` turns output token ``k`` (of the call's reasoning tokens, then
its answer tokens) into the bytes of its event(s), so the schedule in
:mod:`latdoc.lab.sim._serve` is the same whatever the dialect:

- ``chat``/``completions``: OpenAI's chunks, reasoning as ``delta.reasoning_content``,
  a tool call as ``delta.tool_calls`` (:class:`ChatWriter`);
- ``anthropic``: ``message_start``, ``ping``, a ``thinking`` block, a ``text`` or
  ``tool_use`` block, ``message_delta`` with the usage, ``message_stop``
  (:class:`AnthropicWriter`);
- ``responses``: ``response.created``, a reasoning item with its summary, a message
  or function-call item, ``response.completed`` (``response.incomplete`` when cut at
  the limit) with the usage (:class:`ResponsesWriter`).

A tool call's arguments are ``{"words": "<the answer's words>"}``, one word a token.
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

from latdoc.lab.sim._events import (
    CHAT,
    COMPLETIONS,
    DONE,
    Events,
    arguments,
    output_token,
    sse,
)
from latdoc.lab.sim._request import Call
from latdoc.lab.sim._responses_writer import ResponsesWriter

__all__ = ["AnthropicWriter", "ChatWriter", "StreamWriter", "make_writer"]


class StreamWriter(Protocol):
    def opening(self) -> bytes:
        """Events sent with the headers (may be empty)."""
        ...

    def token(self, k: int) -> bytes:
        """The event(s) of output token ``k``: reasoning below ``reasoning_tokens``."""
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
    """OpenAI chat completions and completions chunks."""

    def __init__(self, call: Call, call_id: str, stamp: bool) -> None:
        self.call = call
        chat = call.kind == "chat"
        self.fragments = CHAT if chat else COMPLETIONS
        self.events = Events(
            call_id,
            "chat.completion.chunk" if chat else "text_completion",
            int(time.time()),
            call.model,
            stamp,
        )

    def opening(self) -> bytes:
        role = self.fragments.role
        return b"" if role is None else self.events.body(role)

    def token(self, k: int) -> bytes:
        call = self.call
        thinking = call.reasoning_tokens
        if k < thinking:
            return self.events.body(_chat_choice({"reasoning_content": output_token(k)}))
        k -= thinking
        if call.tool_name is None:
            tokens = self.fragments.tokens
            return self.events.body(tokens[k % len(tokens)])
        function: dict[str, Any] = {"arguments": arguments(call, k)}
        tool: dict[str, Any] = {"index": 0, "function": function}
        if k == 0:
            tool.update(id="call_lab", type="function")
            function["name"] = call.tool_name
        return self.events.body(_chat_choice({"tool_calls": [tool]}))

    def closing(self, usage: dict[str, Any], truth: dict[str, Any] | None) -> list[bytes]:
        call = self.call
        lab = b',"lab":%s' % json.dumps(truth, separators=(",", ":")).encode() if truth else b""
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
            tail = b'[],"usage":%s' % json.dumps(usage, separators=(",", ":")).encode()
            return [self.events.body(finish), self.events.body(tail, lab), DONE]
        return [self.events.body(finish, lab), DONE]

    def malformed(self) -> bytes:
        return self.events.malformed_body()

    def overloaded(self) -> bytes:
        error = {"message": "Overloaded", "type": "overloaded_error", "code": "overloaded_error"}
        return b"data: %s\n\n" % json.dumps({"error": error}).encode()


def _chat_choice(delta: dict[str, Any]) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": None}
    return json.dumps([choice], separators=(",", ":")).encode()


_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens"}


class AnthropicWriter:
    """Anthropic Messages stream events."""

    def __init__(self, call: Call, call_id: str, stamp: bool, cached_tokens: int) -> None:
        self.call = call
        self.id = call_id
        self.stamp = stamp
        self.cached = cached_tokens
        self.block = -1

    def _event(self, obj: dict[str, Any]) -> bytes:
        return sse(str(obj["type"]), obj, self.stamp)

    def opening(self) -> bytes:
        call = self.call
        usage: dict[str, Any] = {
            "input_tokens": call.prompt_tokens - self.cached,
            "output_tokens": 1,
            "cache_read_input_tokens": self.cached,
            "cache_creation_input_tokens": 0,
        }
        message: dict[str, Any] = {
            "id": self.id, "type": "message", "role": "assistant", "model": call.model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage,
        }  # fmt: skip
        start = self._event({"type": "message_start", "message": message})
        return start + self._event({"type": "ping"})

    def _start(self, block: dict[str, Any]) -> bytes:
        out = self._stop()
        self.block += 1
        start = {"type": "content_block_start", "index": self.block, "content_block": block}
        return out + self._event(start)

    def _stop(self) -> bytes:
        if self.block < 0:
            return b""
        return self._event({"type": "content_block_stop", "index": self.block})

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return self._event({"type": "content_block_delta", "index": self.block, "delta": delta})

    def token(self, k: int) -> bytes:
        call = self.call
        thinking = call.reasoning_tokens
        if k < thinking:
            head = (
                self._start({"type": "thinking", "thinking": "", "signature": ""})
                if k == 0
                else b""
            )
            return head + self._delta({"type": "thinking_delta", "thinking": output_token(k)})
        k -= thinking
        head = b""
        if k == 0:
            if thinking:
                head = self._delta({"type": "signature_delta", "signature": "lab-signature"})
            if call.tool_name is None:
                head += self._start({"type": "text", "text": ""})
            else:
                block = {"type": "tool_use", "id": "toolu_lab", "name": call.tool_name, "input": {}}
                head += self._start(block)
        if call.tool_name is None:
            return head + self._delta({"type": "text_delta", "text": output_token(k)})
        return head + self._delta({"type": "input_json_delta", "partial_json": arguments(call, k)})

    def closing(self, usage: dict[str, Any], truth: dict[str, Any] | None) -> list[bytes]:
        call = self.call
        stop = _ANTHROPIC_STOP[call.finish_reason]
        if call.tool_name is not None and call.finish_reason == "stop":
            stop = "tool_use"
        out_usage: dict[str, Any] = {"output_tokens": call.total_tokens}
        if call.reasoning_tokens:
            out_usage["output_tokens_details"] = {"thinking_tokens": call.reasoning_tokens}
        delta: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": out_usage,
        }
        if truth:
            delta["lab"] = truth
        return [self._stop() + self._event(delta), self._event({"type": "message_stop"})]

    def malformed(self) -> bytes:
        return b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"d\n\n'

    def overloaded(self) -> bytes:
        error = {"type": "overloaded_error", "message": "Overloaded"}
        return sse("error", {"type": "error", "error": error})


def make_writer(call: Call, number: int, stamp: bool, cached_tokens: int) -> StreamWriter:
    """The writer of ``call``'s dialect; ``number`` makes its response id."""
    if call.kind == "anthropic":
        return AnthropicWriter(call, f"msg_lab{number}", stamp, cached_tokens)
    if call.kind == "responses":
        return ResponsesWriter(call, f"resp_lab{number}", stamp, cached_tokens)
    prefix = "chatcmpl" if call.kind == "chat" else "cmpl"
    return ChatWriter(call, f"{prefix}-lab{number}", stamp)
