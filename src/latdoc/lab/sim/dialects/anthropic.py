"""Anthropic's Messages API as the lab serves it (``/v1/messages``).

The key comes as ``x-api-key`` (or a bearer token) with a required
``anthropic-version``; the prompt is ``system`` and ``messages``; ``max_tokens`` is
required; reasoning is asked by ``thinking`` (``disabled``, or its ``budget_tokens``
as a cap); usage comes with every stream; errors are worded
``{"type": "error", "error": {...}}``. The stream (:class:`AnthropicWriter`) is
``message_start``, ``ping``, a ``thinking`` block, a ``text`` or ``tool_use`` block,
``message_delta`` with the usage, ``message_stop``.
"""

from __future__ import annotations

import json
from typing import Any

from latdoc.lab.sim._call import ApiError, Call
from latdoc.lab.sim._events import answer_text, answer_token, arguments, output_token, sse
from latdoc.lab.sim._writers import StreamWriter, each_token
from latdoc.lab.sim.dialects._stand_in import Authorized, Headers, StandIn

__all__ = ["STAND_IN", "AnthropicWriter"]

_STOP = {"stop": "end_turn", "length": "max_tokens"}


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

    def tokens(self, first: int, count: int) -> bytes:
        return each_token(self, first, count)

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
            return head + self._delta({"type": "text_delta", "text": answer_token(call, k)})
        return head + self._delta({"type": "input_json_delta", "partial_json": arguments(call, k)})

    def closing(self, usage: dict[str, Any], truth: dict[str, Any] | None) -> list[bytes]:
        call = self.call
        stop = _STOP[call.finish_reason]
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


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def _error_body(error: ApiError) -> bytes:
    """The error as Anthropic's API words it: ``{"type": "error", "error": {...}}``."""
    kind = _ERROR_TYPES.get(error.status, "api_error")
    return json.dumps({"type": "error", "error": {"type": kind, "message": error.message}}).encode()


def _check_key(header: Headers, authorized: Authorized) -> None:
    """``x-api-key`` (or a bearer token) and ``anthropic-version``."""
    key = header(b"x-api-key")
    if not authorized(header(b"authorization") if key is None else b"Bearer " + key):
        raise ApiError(401, "invalid x-api-key")
    if header(b"anthropic-version") is None:
        raise ApiError(400, "anthropic-version: header is required")


def _messages(data: dict[str, object]) -> object:
    messages = data.get("messages")
    system = data.get("system")
    if system is None or not isinstance(messages, list):
        return messages
    return [{"role": "system", "content": system}, *messages]


def _reasoning(data: dict[str, object], medium: int) -> int:
    thinking = data.get("thinking")
    if not isinstance(thinking, dict):
        return medium
    if thinking.get("type") == "disabled":
        return 0
    budget = thinking.get("budget_tokens")
    if isinstance(budget, int) and not isinstance(budget, bool):
        return max(0, min(medium, budget))
    return medium


def _writer(call: Call, number: int, stamp: bool, cached_tokens: int) -> StreamWriter:
    return AnthropicWriter(call, f"msg_lab{number}", stamp, cached_tokens)


def _document(call: Call, number: int, usage: dict[str, Any], cached: int) -> dict[str, object]:
    stop = "end_turn" if call.finish_reason == "stop" else "max_tokens"
    return {
        "id": f"msg_lab{number}", "type": "message", "role": "assistant",
        "model": call.model, "content": [{"type": "text", "text": answer_text(call)}],
        "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": call.prompt_tokens - cached,
                  "output_tokens": call.total_tokens,
                  "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0},
    }  # fmt: skip


STAND_IN = StandIn(
    name="anthropic",
    path="/v1/messages",
    messages=_messages,
    writer=_writer,
    document=_document,
    reasoning=_reasoning,
    usage_always=True,
    requires_max_tokens=True,
    check_key=_check_key,
    error_body=_error_body,
)
