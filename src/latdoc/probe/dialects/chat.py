"""OpenAI chat completions (``POST /chat/completions``), as served by OpenAI, vLLM,
llama.cpp, SGLang, Ollama and most gateways; its events are read the same way for
(legacy) completions (:mod:`.completions`).

The key is a bearer token from ``OPENAI_API_KEY``; the stream ends with ``[DONE]``
(or a finish reason) and reports its usage when ``stream_options.include_usage``
asks for it. A reasoning effort is ``reasoning_effort``.

An event's answer is ``delta.content``, a tool call's ``function.name`` and
``function.arguments`` in ``delta.tool_calls`` (or the older ``delta.function_call``),
a ``delta.refusal`` or a completion's ``text``; the tool call's part is also told
apart, as the first tool-call output; its reasoning is ``delta.reasoning_content`` or
``delta.reasoning``. A role-only or empty delta carries none and never counts as a
token. An event with a ``type`` of another dialect's (``message_start``,
``response.created``) says the endpoint speaks that dialect. MiniMax's error, a
``base_resp`` with a code other than 0 (sent with HTTP 200), is an error of the status
its code stands for.

The server's own times, where the events carry them: llama.cpp's ``timings``
(``prompt_ms``, ``predicted_ms``); vLLM's per-request ``metrics`` (``queue_time_ms``,
``time_to_first_token_ms`` from arrival, ``generation_time_ms``), kept as
``vllm-queue``, ``vllm-ttft`` and ``vllm-generation``; Groq's ``queue_time``,
``prompt_time`` and ``completion_time`` (seconds, in ``usage`` or ``x_groq.usage`` of the
last chunk), kept in ms as ``groq-queue``, ``groq-prompt`` and ``groq-completion``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from latdoc.errors import status_of_error_type
from latdoc.probe._events import (
    EventInfo,
    ToolPart,
    Usage,
    base_resp_error,
    int_or_none,
    text_or_none,
)
from latdoc.probe._quirks import at_path, count_at
from latdoc.probe.dialects._spec import (
    BY_MAX_TOKENS,
    BY_MODEL,
    BY_PROMPT,
    STREAMING,
    USAGE_ASKED,
    CalledTool,
    DialectSpec,
    Foreign,
    Messages,
    Route,
    Tool,
    bearer_auth,
)
from latdoc.probe.providers import CACHED_TOKEN_FIELDS, REASONING_TOKEN_FIELDS, USAGE_PLACES

__all__ = ["SPEC", "chat_usage", "parse_chat_event"]

_ANSWER_KEYS = ("content", "refusal")
_REASONING_KEYS = ("reasoning_content", "reasoning")


_GENERAL_KEYS = frozenset(("error", "usage", "x_groq", "timings", "metrics", "base_resp"))
"""Fields of an event only the general reading below interprets."""
_PLAIN_DELTA_KEYS = frozenset(("content", "role"))


def parse_chat_event(obj: Any, event: str | None, foreign: Foreign) -> EventInfo:
    """Interpret one JSON event of chat completions or completions."""
    plain = _plain_chunk(obj)
    return plain if plain is not None else read_chat_event(obj, event, foreign)


def read_chat_event(obj: Any, event: str | None, foreign: Foreign) -> EventInfo:
    """:func:`parse_chat_event` without its glance at the commonest event."""
    if not isinstance(obj, dict):
        return EventInfo(error=f"event is a JSON {type(obj).__name__}, not an object")
    error = obj.get("error")
    if error is not None:
        if not isinstance(error, dict):
            return EventInfo(error=str(error))
        kind = error.get("code") or error.get("type")
        status = status_of_error_type(kind) if isinstance(kind, str) else None
        return EventInfo(error=str(error.get("message") or error), error_status=status)
    failed = base_resp_error(obj.get("base_resp"))
    if failed is not None:
        return failed
    choices = obj.get("choices")
    if choices is None and "usage" not in obj and "x_groq" not in obj:
        other = foreign(obj, event)
        if other is not None:
            return EventInfo(other_dialect=other, unknown=True)
    answer: list[str] = []
    reasoning: list[str] = []
    tools: list[str] = []
    calls: list[ToolPart] = []
    finish: str | None = None
    if isinstance(choices, list):
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            _choice_parts(choice, answer, reasoning, tools, calls)
            reason = choice.get("finish_reason")
            if isinstance(reason, str):
                finish = reason
    tool_chars = sum(len(p) for p in tools)
    answer_chars = sum(len(p) for p in answer) + tool_chars
    reasoning_chars = sum(len(p) for p in reasoning)
    response_id = obj.get("id")
    return EventInfo(
        output_chars=answer_chars,
        tool_chars=tool_chars,
        reasoning_chars=reasoning_chars,
        text="".join(reasoning) + "".join(answer) + "".join(tools)
        if answer_chars or reasoning_chars
        else "",
        finish_reason=finish,
        usage=chat_usage(_usage_of(obj)),
        server_timing=_server_timing(obj),
        response_id=response_id if isinstance(response_id, str) else None,
        tool_parts=tuple(calls),
    )


def _plain_chunk(obj: Any) -> EventInfo | None:
    """The commonest event, read at a glance: one choice whose delta carries only
    ``content`` (and perhaps ``role``), no finish, usage, timing or error. ``None`` for
    anything else, which the general reading takes; both read such an event alike. At
    hundreds of streams this is most events of a load, each on the loop's clock."""
    if type(obj) is not dict or not _GENERAL_KEYS.isdisjoint(obj):
        return None
    choices = obj.get("choices")
    if type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if (
        type(choice) is not dict
        or choice.get("finish_reason") is not None
        or "text" in choice
        or "usage" in choice
    ):
        return None
    delta = choice.get("delta")
    if type(delta) is not dict or not _PLAIN_DELTA_KEYS.issuperset(delta):
        return None
    content = delta.get("content")
    if content is not None and type(content) is not str:
        return None
    response_id = obj.get("id")
    return EventInfo(
        output_chars=len(content) if content else 0,
        text=content or "",
        response_id=response_id if type(response_id) is str else None,
    )


def _choice_parts(
    choice: dict[str, Any],
    answer: list[str],
    reasoning: list[str],
    tools: list[str],
    calls: list[ToolPart],
) -> None:
    delta = choice.get("delta")
    if isinstance(delta, dict):
        for key in _ANSWER_KEYS:
            value = delta.get(key)
            if isinstance(value, str):
                answer.append(value)
        for key in _REASONING_KEYS:
            value = delta.get(key)
            if isinstance(value, str):
                reasoning.append(value)
        listed = delta.get("tool_calls")
        functions = [
            (c.get("index", place), c.get("function"), text_or_none(c.get("id")))
            for place, c in enumerate(listed if isinstance(listed, list) else ())
            if isinstance(c, dict)
        ]
        functions.append((0, delta.get("function_call"), None))
        for index, function, call_id in functions:
            if isinstance(function, dict):
                name, arguments = function.get("name"), function.get("arguments")
                name = text_or_none(name)
                arguments = arguments if isinstance(arguments, str) else ""
                tools.extend(p for p in (name, arguments) if p)
                if name or arguments:
                    part = ToolPart(int_or_none(index), name, len(arguments), arguments, call_id)
                    calls.append(part)
    text = choice.get("text")
    if isinstance(text, str):
        answer.append(text)


def chat_usage(raw: Any) -> Usage | None:
    """``usage`` of chat completions: prompt, completion, cached and reasoning tokens,
    the last two from the first field any preset counts them in
    (:data:`~latdoc.probe.providers.CACHED_TOKEN_FIELDS`: OpenAI's
    ``prompt_tokens_details.cached_tokens``, DeepSeek's ``prompt_cache_hit_tokens``,
    Moonshot's ``cached_tokens`` …), whoever served the stream."""
    if not isinstance(raw, dict):
        return None
    return Usage(
        prompt_tokens=int_or_none(raw.get("prompt_tokens")),
        completion_tokens=int_or_none(raw.get("completion_tokens")),
        cached_prompt_tokens=count_at(raw, CACHED_TOKEN_FIELDS),
        reasoning_tokens=count_at(raw, REASONING_TOKEN_FIELDS),
    )


_LLAMACPP_TIMINGS = {k: k for k in ("prompt_ms", "predicted_ms", "predicted_per_token_ms")}
_VLLM_METRICS = {
    "queue_time_ms": "vllm-queue",
    "time_to_first_token_ms": "vllm-ttft",
    "generation_time_ms": "vllm-generation",
}
_GROQ_USAGE = {
    "queue_time": "groq-queue",
    "prompt_time": "groq-prompt",
    "completion_time": "groq-completion",
}
"""In seconds: kept in ms."""


def _usage_of(obj: dict[str, Any]) -> Any:
    """``usage``, or where else a preset's stream carries it
    (:data:`~latdoc.probe.providers.USAGE_PLACES`: Groq's ``x_groq.usage``, Moonshot's
    ``choices[0].usage``)."""
    return next(
        (usage for place in USAGE_PLACES if isinstance(usage := at_path(obj, place), dict)),
        None,
    )


def _durations(raw: Any, names: dict[str, str], scale: float = 1.0) -> dict[str, float]:
    if not isinstance(raw, dict):
        return {}
    out: dict[str, float] = {}
    for key, name in names.items():
        value = raw.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            out[name] = float(value) * scale
    return out


def _server_timing(obj: dict[str, Any]) -> dict[str, float] | None:
    """The server's own times an event carries, by the names the trace keeps them under."""
    groq = obj.get("x_groq")
    out = {
        **_durations(obj.get("timings"), _LLAMACPP_TIMINGS),
        **_durations(obj.get("metrics"), _VLLM_METRICS),
        **_durations(obj.get("usage"), _GROQ_USAGE, 1000.0),
        **_durations(groq.get("usage") if isinstance(groq, dict) else None, _GROQ_USAGE, 1000.0),
    }
    return out or None


def _body(model: str, messages: Messages, max_tokens: int, include_usage: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "stream": True,
        "messages": messages,
    }
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    return body


def _claims(obj: dict[str, Any], event: str | None) -> bool:
    return "type" not in obj and isinstance(obj.get("choices"), list)


def _tools(tools: Sequence[Tool]) -> dict[str, Any]:
    return {
        "tools": [
            {"type": "function", "function": t.described(name=t.name, parameters=t.parameters)}
            for t in tools
        ]
    }


def _tool_turn(
    text: str, calls: Sequence[CalledTool], results: Sequence[str]
) -> list[dict[str, Any]]:
    functions = [
        {"id": c.call_id, "type": "function",
         "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]  # fmt: skip
    answered = [
        {"role": "tool", "tool_call_id": c.call_id, "content": result}
        for c, result in zip(calls, results, strict=True)
    ]
    return [{"role": "assistant", "content": text or None, "tool_calls": functions}, *answered]


SPEC = DialectSpec(
    name="chat",
    title="OpenAI chat completions",
    route=Route("/chat/completions"),
    key_variable="OPENAI_API_KEY",
    auth_headers=bearer_auth,
    body=_body,
    body_fields={
        "model": BY_MODEL,
        "messages": BY_PROMPT,
        "stream": STREAMING,
        "stream_options": USAGE_ASKED,
        "max_tokens": BY_MAX_TOKENS,
    },
    parse=parse_chat_event,
    end_marker="[DONE] or a finish_reason",
    claims=_claims,
    reasoning=lambda effort: {"reasoning_effort": effort},
    tools=_tools,
    tool_turn=_tool_turn,
    prompt_fields=("messages",),
    usage_option={"stream_options": {"include_usage": True}},
)
