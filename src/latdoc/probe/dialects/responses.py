"""OpenAI's Responses API (``POST /v1/responses`` with ``"stream": true``).

The key is a bearer token from ``OPENAI_API_KEY``; the messages go as ``input`` and
the output limit as ``max_output_tokens``; the usage always comes with the end. A
reasoning effort is ``reasoning.effort``.

Every event names its ``type``. The answer is ``response.output_text.delta``,
``response.refusal.delta`` and a tool call's ``response.function_call_arguments.delta``
(or a custom or MCP tool's input delta), the last three the tool-call output; reasoning
is
``response.reasoning_summary_text.delta`` and ``response.reasoning_text.delta``.
A tool call's name comes with its output item (``response.output_item.added``), which
carries no output. ``response.completed`` ends the stream with the usage (``output_tokens_details.
reasoning_tokens`` among it); ``response.incomplete`` ends it cut short (``length``
when the output limit cut it); ``response.failed`` and ``error`` are failures,
classed by their code's HTTP status where it has one. The lifecycle events
(``response.created``, ``response.output_item.added`` ...) carry no output; any
other type is skipped and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    bearer_auth,
    event_type,
)

__all__ = ["SPEC", "parse_responses_event", "responses_usage"]

_ANSWER = frozenset(
    {
        "response.output_text.delta",
        "response.refusal.delta",
        "response.function_call_arguments.delta",
        "response.custom_tool_call_input.delta",
        "response.mcp_call_arguments.delta",
    }
)
_TOOL = frozenset(
    {
        "response.function_call_arguments.delta",
        "response.custom_tool_call_input.delta",
        "response.mcp_call_arguments.delta",
    }
)
_TOOL_ITEMS = frozenset({"function_call", "custom_tool_call", "mcp_call"})
"""Output items that are a tool call, named when they are added."""
_REASONING = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})
_LIFECYCLE = frozenset(
    {
        "response.queued",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.done",
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.done",
        "response.mcp_call_arguments.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
    }
)
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def parse_responses_event(obj: Any, event: str | None, foreign: Foreign) -> EventInfo:
    """Interpret one JSON event of the Responses stream (``event`` is the SSE name)."""
    if not isinstance(obj, dict):
        return EventInfo(error=f"event is a JSON {type(obj).__name__}, not an object")
    kind = event_type(obj, event)
    if kind in _ANSWER or kind in _REASONING:
        delta = obj.get("delta")
        if not isinstance(delta, str) or not delta:
            return EventInfo()
        if kind in _REASONING:
            return EventInfo(reasoning_chars=len(delta), text=delta)
        if kind not in _TOOL:
            return EventInfo(output_chars=len(delta), text=delta)
        part = ToolPart(int_or_none(obj.get("output_index")), None, len(delta), delta)
        return EventInfo(
            output_chars=len(delta), tool_chars=len(delta), text=delta, tool_parts=(part,)
        )
    if kind == "response.output_item.added":
        return _item_added(obj)
    if kind in _LIFECYCLE:
        return EventInfo()
    if kind == "error":
        return error_event(obj.get("code"), obj.get("message"))
    response = obj.get("response")
    response = response if isinstance(response, dict) else {}
    rid = response.get("id") if isinstance(response.get("id"), str) else None
    if kind == "response.created":
        return EventInfo(response_id=rid)
    if kind == "response.completed":
        return EventInfo(
            finish_reason="stop",
            usage=responses_usage(response.get("usage")),
            response_id=rid,
            ends_stream=True,
        )
    if kind == "response.incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        finish = _INCOMPLETE.get(reason, reason) if isinstance(reason, str) else "incomplete"
        return EventInfo(
            finish_reason=finish,
            usage=responses_usage(response.get("usage")),
            response_id=rid,
            ends_stream=True,
        )
    if kind == "response.failed":
        error = response.get("error")
        error = error if isinstance(error, dict) else {}
        return error_event(error.get("code"), error.get("message") or "response.failed")
    return EventInfo(unknown=True, other_dialect=foreign(obj, event))


def _item_added(obj: dict[str, Any]) -> EventInfo:
    """An output item's start: a tool call's names the call (no output yet, its
    arguments' deltas follow); any other carries nothing."""
    item = obj.get("item")
    if not isinstance(item, dict) or item.get("type") not in _TOOL_ITEMS:
        return EventInfo()
    name, call_id = text_or_none(item.get("name")), text_or_none(item.get("call_id"))
    place = int_or_none(obj.get("output_index"))
    return EventInfo(tool_parts=(ToolPart(place, name, call_id=call_id),))


def responses_usage(raw: Any) -> Usage | None:
    """The Responses ``usage``: input (cached among it) and output (reasoning among it)."""
    if not isinstance(raw, dict):
        return None
    return Usage(
        prompt_tokens=int_or_none(raw.get("input_tokens")),
        completion_tokens=int_or_none(raw.get("output_tokens")),
        cached_prompt_tokens=detail_int(raw, "input_tokens_details", "cached_tokens"),
        reasoning_tokens=detail_int(raw, "output_tokens_details", "reasoning_tokens"),
    )


def _body(model: str, messages: Messages, max_tokens: int, include_usage: bool) -> dict[str, Any]:
    return {"model": model, "max_output_tokens": max_tokens, "stream": True, "input": messages}


def _claims(obj: dict[str, Any], event: str | None) -> bool:
    kind = event_type(obj, event)
    return kind is not None and kind.startswith("response.")


def _tools(tools: Sequence[Tool]) -> dict[str, Any]:
    return {
        "tools": [t.described(type="function", name=t.name, parameters=t.parameters) for t in tools]
    }


def _tool_turn(
    text: str, calls: Sequence[CalledTool], results: Sequence[str]
) -> list[dict[str, Any]]:
    said: list[dict[str, Any]] = [{"role": "assistant", "content": text}] if text else []
    items = [
        {"type": "function_call", "call_id": c.call_id, "name": c.name,
         "arguments": c.arguments}
        for c in calls
    ]  # fmt: skip
    outputs = [
        {"type": "function_call_output", "call_id": c.call_id, "output": result}
        for c, result in zip(calls, results, strict=True)
    ]
    return [*said, *items, *outputs]


SPEC = DialectSpec(
    name="responses",
    title="OpenAI's Responses API",
    route=Route("/responses"),
    key_variable="OPENAI_API_KEY",
    auth_headers=bearer_auth,
    body=_body,
    body_fields={
        "model": BY_MODEL,
        "input": BY_PROMPT,
        "stream": STREAMING,
        "max_output_tokens": BY_MAX_TOKENS,
    },
    parse=parse_responses_event,
    end_marker="response.completed",
    claims=_claims,
    reasoning=lambda effort: {"reasoning": {"effort": effort}},
    tools=_tools,
    tool_turn=_tool_turn,
    prompt_fields=("instructions", "input"),
)
