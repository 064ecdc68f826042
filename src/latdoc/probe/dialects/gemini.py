"""Google's Gemini API (``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``).

The base URL is ``https://generativelanguage.googleapis.com/v1beta``; the model is named
in the path (URL-quoted), not in the body. The key goes in ``x-goog-api-key``, read from
``GOOGLE_API_KEY`` or else ``GEMINI_API_KEY``, as Google's SDK reads them. The messages
go as ``contents`` (an assistant's turn as the ``model`` role), system messages as
``systemInstruction``, the output limit as ``generationConfig.maxOutputTokens``. A
reasoning effort is a thinking budget (:data:`THINKING_BUDGETS`,
``generationConfig.thinkingConfig.thinkingBudget``; 0 turns thinking off).

With ``alt=sse`` each ``data:`` frame is a whole ``GenerateContentResponse``; there is
no ``[DONE]``: the stream ends when the body does, its last response carrying a
``finishReason``. Without ``alt=sse`` the same responses come as one JSON array,
streamed (:data:`~latdoc.probe._framing.JSON_ARRAY`); the response's content type says
which, and both are read.

A response's answer is the ``text`` of ``candidates[].content.parts[]`` (and a
``functionCall``'s name and arguments, executable code and its result); a part with
``"thought": true`` is reasoning; a ``functionCall`` is the tool-call output. A frame
whose candidates carry no parts (the role alone, or only the usage) is no output.
``usageMetadata`` counts the prompt
(``promptTokenCount``, ``cachedContentTokenCount`` of it served from a cache), the
answer (``candidatesTokenCount``) and the thinking (``thoughtsTokenCount``); the output
is the answer and the thinking together, as OpenAI counts it. A model that thinks
without streaming thought parts (the default unless ``includeThoughts`` asks for them)
reports its thinking only in ``thoughtsTokenCount``: the trace keeps those as
reasoning tokens, and the chunk that follows is not charged with them. An ``error``
object (``{"error": {"code", "message", "status"}}``), on the stream or as the body of
a refused request, is a failure with its HTTP ``code``; a prompt blocked
(``promptFeedback.blockReason``) ends the answer as ``content_filter``.

:mod:`.vertex` speaks the same events on Vertex AI's path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from latdoc.probe._events import EventInfo, ToolPart, Usage, int_or_none, text_or_none
from latdoc.probe._framing import JSON_ARRAY, SSE
from latdoc.probe.dialects._spec import (
    BY_MAX_TOKENS,
    BY_PROMPT,
    CalledTool,
    DialectSpec,
    Foreign,
    Messages,
    Route,
    Tool,
)

__all__ = [
    "GOOGLE_STATUS",
    "SPEC",
    "THINKING_BUDGETS",
    "gemini_body",
    "gemini_body_fields",
    "gemini_thinking",
    "gemini_tool_turn",
    "gemini_tools",
    "gemini_usage",
    "parse_gemini_event",
]

THINKING_BUDGETS: Mapping[str, int] = {
    "none": 0,
    "minimal": 128,
    "low": 1024,
    "medium": 8192,
    "high": 24576,
}
"""Gemini's thinking budget for each reasoning effort (0 turns thinking off where the
model allows it; 24576 is 2.5 Flash's largest)."""

GOOGLE_STATUS: Mapping[str, int] = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ABORTED": 409,
    "ALREADY_EXISTS": 409,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "INTERNAL": 500,
    "UNKNOWN": 500,
    "DATA_LOSS": 500,
    "UNIMPLEMENTED": 501,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
"""The HTTP status of each canonical status a Google error names, for an error whose
``code`` is missing."""

_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "LANGUAGE": "content_filter",
}
_OWN = ("candidates", "usageMetadata", "promptFeedback")
"""Fields only a ``GenerateContentResponse`` has."""


def parse_gemini_event(obj: Any, event: str | None, foreign: Foreign) -> EventInfo:
    """Interpret one ``GenerateContentResponse`` (an SSE frame or an array element)."""
    if not isinstance(obj, dict):
        return EventInfo(error=f"event is a JSON {type(obj).__name__}, not an object")
    if "error" in obj:
        return google_error(obj["error"])
    if not any(key in obj for key in _OWN):
        return EventInfo(unknown=True, other_dialect=foreign(obj, event))
    answer: list[str] = []
    reasoning: list[str] = []
    tools: list[str] = []
    calls: list[ToolPart] = []
    finish: str | None = None
    candidates = obj.get("candidates")
    for candidate in candidates if isinstance(candidates, list) else ():
        if not isinstance(candidate, dict):
            continue
        _parts(candidate.get("content"), answer, reasoning, tools, calls)
        reason = candidate.get("finishReason")
        if isinstance(reason, str):
            finish = _FINISH.get(reason, reason.lower())
    feedback = obj.get("promptFeedback")
    if finish is None and isinstance(feedback, dict) and feedback.get("blockReason"):
        finish = "content_filter"
    tool_chars = sum(len(p) for p in tools)
    answer_chars = sum(len(p) for p in answer) + tool_chars
    reasoning_chars = sum(len(p) for p in reasoning)
    response_id = obj.get("responseId")
    return EventInfo(
        output_chars=answer_chars,
        tool_chars=tool_chars,
        reasoning_chars=reasoning_chars,
        text="".join(reasoning) + "".join(answer) + "".join(tools),
        finish_reason=finish,
        usage=gemini_usage(obj.get("usageMetadata")),
        response_id=response_id if isinstance(response_id, str) else None,
        tool_parts=tuple(calls),
    )


def _parts(
    content: Any,
    answer: list[str],
    reasoning: list[str],
    tools: list[str],
    calls: list[ToolPart],
) -> None:
    """Adds a candidate's text to ``answer`` or ``reasoning``, a function call's name and
    arguments to ``tools`` and the call, whole, to ``calls``."""
    parts = content.get("parts") if isinstance(content, dict) else None
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict):
            continue
        text = part.get("text")
        if isinstance(text, str):
            (reasoning if part.get("thought") is True else answer).append(text)
        call = part.get("functionCall")
        if isinstance(call, dict):
            name = text_or_none(call.get("name"))
            args = (
                "" if call.get("args") is None else json.dumps(call["args"], separators=(",", ":"))
            )
            tools.extend(p for p in (name, args) if p)
            calls.append(ToolPart(None, name, len(args), args, text_or_none(call.get("id"))))
        code = part.get("executableCode")
        if isinstance(code, dict) and isinstance(code.get("code"), str):
            answer.append(code["code"])
        result = part.get("codeExecutionResult")
        if isinstance(result, dict) and isinstance(result.get("output"), str):
            answer.append(result["output"])


def google_error(error: Any) -> EventInfo:
    """A Google error object: ``STATUS: message``, with its HTTP ``code``."""
    if not isinstance(error, dict):
        return EventInfo(error=str(error or "error without details"))
    status = error.get("status")
    message = error.get("message")
    text = ": ".join(str(p) for p in (status, message) if p) or "error without details"
    code = int_or_none(error.get("code"))
    if code is None and isinstance(status, str):
        code = GOOGLE_STATUS.get(status)
    return EventInfo(error=text, error_status=code)


def gemini_usage(raw: Any) -> Usage | None:
    """``usageMetadata``: the prompt (the cached part among it), and the output as the
    answer's tokens and the thinking's together, the thinking also on its own."""
    if not isinstance(raw, dict):
        return None
    answer = int_or_none(raw.get("candidatesTokenCount"))
    thoughts = int_or_none(raw.get("thoughtsTokenCount"))
    output = None if answer is None and thoughts is None else (answer or 0) + (thoughts or 0)
    return Usage(
        prompt_tokens=int_or_none(raw.get("promptTokenCount")),
        completion_tokens=output,
        cached_prompt_tokens=int_or_none(raw.get("cachedContentTokenCount")),
        reasoning_tokens=thoughts,
    )


def gemini_body(
    model: str, messages: Messages, max_tokens: int, include_usage: bool
) -> dict[str, Any]:
    """``contents`` (``user`` and ``model`` turns; a message with ``parts``, as
    :func:`gemini_tool_turn` writes, keeps them), ``systemInstruction`` and the output
    limit; the model is in the path."""
    system = [m["content"] for m in messages if m.get("role") == "system"]
    contents = [
        {
            "role": "model" if m.get("role") == "assistant" else "user",
            "parts": m["parts"] if "parts" in m else [{"text": m["content"]}],
        }
        for m in messages
        if m.get("role") != "system"
    ]
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    body["generationConfig"] = {"maxOutputTokens": max_tokens}
    return body


gemini_body_fields: Mapping[str, str] = {
    "contents": BY_PROMPT,
    "systemInstruction": BY_PROMPT,
    "generationConfig.maxOutputTokens": BY_MAX_TOKENS,
}
"""The body fields :func:`gemini_body` writes."""


def gemini_thinking(effort: str) -> dict[str, Any]:
    """The thinking budget of ``effort``, inside ``generationConfig``."""
    budget = THINKING_BUDGETS[effort]
    return {"generationConfig": {"thinkingConfig": {"thinkingBudget": budget}}}


def _auth_headers(api_key: str | None) -> list[tuple[bytes, bytes]]:
    return [(b"x-goog-api-key", api_key.encode())] if api_key else []


def gemini_tools(tools: Sequence[Tool]) -> dict[str, Any]:
    declared = [t.described(name=t.name, parameters=t.parameters) for t in tools]
    return {"tools": [{"functionDeclarations": declared}]}


def gemini_tool_turn(
    text: str, calls: Sequence[CalledTool], results: Sequence[str]
) -> list[dict[str, Any]]:
    """The model's turn (its text, then a ``functionCall`` part a call) and the user's
    turn answering each with a ``functionResponse`` part, its result as ``result``."""
    said: list[dict[str, Any]] = [{"text": text}] if text else []
    said += [{"functionCall": {"name": c.name, "args": c.arguments_object}} for c in calls]
    answered = [
        {"functionResponse": {"name": c.name, "response": {"result": result}}}
        for c, result in zip(calls, results, strict=True)
    ]
    return [{"role": "assistant", "parts": said}, {"role": "user", "parts": answered}]


SPEC = DialectSpec(
    name="gemini",
    title="Google's Gemini API",
    route=Route("/models/{model}:streamGenerateContent?alt=sse"),
    key_variable="GOOGLE_API_KEY",
    also_key_variables=("GEMINI_API_KEY",),
    auth_headers=_auth_headers,
    body=gemini_body,
    body_fields=gemini_body_fields,
    parse=parse_gemini_event,
    end_marker="a finishReason",
    claims=lambda obj, event: any(key in obj for key in _OWN),
    reasoning=gemini_thinking,
    hosts=("generativelanguage.googleapis.com",),
    otel_operation="generate_content",
    framings=(SSE, JSON_ARRAY),
    tools=gemini_tools,
    tool_turn=gemini_tool_turn,
    prompt_fields=("systemInstruction", "contents"),
)
