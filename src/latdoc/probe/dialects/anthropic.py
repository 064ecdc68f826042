"""Anthropic's Messages API (``POST /v1/messages`` with ``"stream": true``).

The key is ``x-api-key`` from ``ANTHROPIC_API_KEY``, sent with ``anthropic-version``;
system messages go in the top-level ``system``; the usage always comes on the
stream. A reasoning effort is a ``thinking`` budget (:data:`THINKING_BUDGETS`).
The stream is ``message_start`` (the message id and the prompt's usage), then for
each content block ``content_block_start``, ``content_block_delta``\\ s and
``content_block_stop``, then ``message_delta`` (the stop reason and the output's
cumulative usage) and ``message_stop``; ``ping`` may come at any time. A delta's
answer is a ``text_delta``'s ``text`` or an ``input_json_delta``'s ``partial_json``
(a tool call's input, with the name on the block's start the tool-call output), its
reasoning a ``thinking_delta``'s ``thinking``; a
``signature_delta`` or ``citations_delta`` carries neither. A tool-use block's
start carries its name, which is answer too. An ``error`` event names its type;
its status is the one Anthropic gives that type over HTTP (``overloaded_error``:
529), from :func:`~latdoc.errors.status_of_error_type`. Any other event type is
skipped and counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from latdoc.probe._events import (
    EventInfo,
    ToolPart,
    Usage,
    detail_int,
    error_event,
    int_or_none,
    text_or_none,
)
from latdoc.probe.dialects._spec import (
    BY_MAX_TOKENS,
    BY_MODEL,
    BY_PROMPT,
    STREAMING,
    CalledTool,
    DialectSpec,
    Foreign,
    Messages,
    Route,
    Tool,
    event_type,
)

__all__ = [
    "ANTHROPIC_VERSION",
    "SPEC",
    "THINKING_BUDGETS",
    "anthropic_usage",
    "parse_anthropic_event",
]

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent with Anthropic requests."""

THINKING_BUDGETS: Mapping[str, int | None] = {
    "none": None,
    "minimal": None,
    "low": 1024,
    "medium": 4096,
    "high": 16384,
}
"""Anthropic's thinking budget for each reasoning effort (1024 is its smallest)."""

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_SILENT = frozenset({"ping", "content_block_stop"})
_OWN = frozenset({"message_start", "content_block_start", "content_block_delta", "message_delta"})
"""Event types only Anthropic's stream has."""
_QUIET_DELTAS = frozenset({"signature_delta", "citations_delta"})


def parse_anthropic_event(obj: Any, event: str | None, foreign: Foreign) -> EventInfo:
    """Interpret one JSON event of the Messages stream (``event`` is the SSE name)."""
    if not isinstance(obj, dict):
        return EventInfo(error=f"event is a JSON {type(obj).__name__}, not an object")
    kind = event_type(obj, event)
    if kind == "error" or (kind is None and isinstance(obj.get("error"), dict)):
        return _error(obj.get("error"))
    if kind == "content_block_delta":
        return _delta(obj.get("delta"), int_or_none(obj.get("index")))
    if kind == "content_block_start":
        return _block_start(obj.get("content_block"), int_or_none(obj.get("index")))
    if kind == "message_start":
        message = obj.get("message")
        message = message if isinstance(message, dict) else {}
        mid = message.get("id")
        return EventInfo(
            usage=anthropic_usage(message.get("usage")),
            response_id=mid if isinstance(mid, str) else None,
        )
    if kind == "message_delta":
        delta = obj.get("delta")
        reason = delta.get("stop_reason") if isinstance(delta, dict) else None
        return EventInfo(
            finish_reason=_STOP_REASONS.get(reason, reason) if isinstance(reason, str) else None,
            usage=anthropic_usage(obj.get("usage")),
        )
    if kind == "message_stop":
        return EventInfo(ends_stream=True)
    if kind in _SILENT:
        return EventInfo()
    return EventInfo(unknown=True, other_dialect=foreign(obj, event))


def _delta(delta: Any, index: int | None) -> EventInfo:
    if not isinstance(delta, dict):
        return EventInfo(unknown=True)
    kind = delta.get("type")
    if kind == "text_delta":
        return _answer(delta.get("text"))
    if kind == "input_json_delta":
        arguments = delta.get("partial_json")
        if isinstance(arguments, str) and arguments:
            return _tool(ToolPart(index, None, len(arguments), arguments), arguments)
        return EventInfo()
    if kind == "thinking_delta":
        thinking = delta.get("thinking")
        if isinstance(thinking, str) and thinking:
            return EventInfo(reasoning_chars=len(thinking), text=thinking)
        return EventInfo()
    if kind in _QUIET_DELTAS:
        return EventInfo()
    return EventInfo(unknown=True)


def _answer(value: Any) -> EventInfo:
    if isinstance(value, str) and value:
        return EventInfo(output_chars=len(value), text=value)
    return EventInfo()


def _tool(part: ToolPart, text: str) -> EventInfo:
    """An event carrying ``text`` of a tool call (its name, or its arguments' JSON)."""
    return EventInfo(output_chars=len(text), tool_chars=len(text), text=text, tool_parts=(part,))


def _block_start(block: Any, index: int | None) -> EventInfo:
    """A block's start: a tool call's name is its first output; text starts empty."""
    if not isinstance(block, dict):
        return EventInfo(unknown=True)
    if block.get("type") in ("tool_use", "server_tool_use"):
        name, call_id = block.get("name"), block.get("id")
        if isinstance(name, str) and name:
            part = ToolPart(index, name, call_id=text_or_none(call_id))
            return _tool(part, name)
        return EventInfo()
    if block.get("type") == "text":
        return _answer(block.get("text"))
    return EventInfo()


def _error(error: Any) -> EventInfo:
    if not isinstance(error, dict):
        return EventInfo(error=str(error or "error event without details"))
    return error_event(error.get("type"), error.get("message"))


def anthropic_usage(raw: Any) -> Usage | None:
    """Anthropic's ``usage``: ``input_tokens`` leaves out the cached prompt, so the
    prompt is input + cache reads + cache writes; thinking tokens are in
    ``output_tokens_details``."""
    if not isinstance(raw, dict):
        return None
    fresh = int_or_none(raw.get("input_tokens"))
    read = int_or_none(raw.get("cache_read_input_tokens"))
    written = int_or_none(raw.get("cache_creation_input_tokens"))
    prompt = None if fresh is None else fresh + (read or 0) + (written or 0)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=int_or_none(raw.get("output_tokens")),
        cached_prompt_tokens=read,
        reasoning_tokens=detail_int(raw, "output_tokens_details", "thinking_tokens"),
    )


def _auth_headers(api_key: str | None) -> list[tuple[bytes, bytes]]:
    version = [(b"anthropic-version", ANTHROPIC_VERSION.encode())]
    return version + ([(b"x-api-key", api_key.encode())] if api_key else [])


def _body(model: str, messages: Messages, max_tokens: int, include_usage: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": True}
    system = [m["content"] for m in messages if m.get("role") == "system"]
    if system:
        body["system"] = "\n\n".join(system)
    body["messages"] = [m for m in messages if m.get("role") != "system"]
    return body


def _thinking(effort: str) -> dict[str, Any]:
    budget = THINKING_BUDGETS[effort]
    if budget is None:
        return {"thinking": {"type": "disabled"}}
    return {"thinking": {"type": "enabled", "budget_tokens": budget}}


def _tools(tools: Sequence[Tool]) -> dict[str, Any]:
    return {"tools": [t.described(name=t.name, input_schema=t.parameters) for t in tools]}


def _tool_turn(
    text: str, calls: Sequence[CalledTool], results: Sequence[str]
) -> list[dict[str, Any]]:
    said: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    uses = [
        {"type": "tool_use", "id": c.call_id, "name": c.name, "input": c.arguments_object}
        for c in calls
    ]
    answered = [
        {"type": "tool_result", "tool_use_id": c.call_id, "content": result}
        for c, result in zip(calls, results, strict=True)
    ]
    return [{"role": "assistant", "content": said + uses}, {"role": "user", "content": answered}]


SPEC = DialectSpec(
    name="anthropic",
    title="Anthropic's Messages API",
    route=Route("/messages"),
    key_variable="ANTHROPIC_API_KEY",
    auth_headers=_auth_headers,
    body=_body,
    body_fields={
        "model": BY_MODEL,
        "messages": BY_PROMPT,
        "stream": STREAMING,
        "max_tokens": BY_MAX_TOKENS,
    },
    parse=parse_anthropic_event,
    end_marker="message_stop or a stop_reason",
    claims=lambda obj, event: event_type(obj, event) in _OWN,
    reasoning=_thinking,
    hosts=("anthropic.com",),
    tools=_tools,
    tool_turn=_tool_turn,
    prompt_fields=("system", "messages"),
)
