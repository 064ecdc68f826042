"""Google's Gemini API as the lab serves it
(``/v1beta/models/{model}:streamGenerateContent``, and under ``/v1``).

The key comes as ``x-goog-api-key`` (or a bearer token): a wrong one is refused as
Google refuses it, ``400 INVALID_ARGUMENT`` ("API key not valid"), a missing one
``403 PERMISSION_DENIED``. The prompt is ``contents`` (``user`` and ``model`` turns)
and ``systemInstruction``; the output limit is ``generationConfig.maxOutputTokens``;
reasoning is ``generationConfig.thinkingConfig``: its ``thinkingBudget`` caps the
thinking (0 turns it off, -1 leaves it to the model), and only with
``includeThoughts`` does the thinking stream, as parts marked ``"thought": true``;
otherwise it takes its time unseen and ``usageMetadata.thoughtsTokenCount`` alone
tells of it. The route always streams; errors are worded
``{"error": {"code", "message", "status"}}``.

The stream (:class:`GeminiWriter`) is one ``GenerateContentResponse`` a token, each
with the usage so far (``promptTokenCount``, ``candidatesTokenCount``,
``thoughtsTokenCount``, ``cachedContentTokenCount`` with the prefix cache), then one
with the ``finishReason`` (``STOP`` or ``MAX_TOKENS``) and the whole usage; a tool
call is one ``functionCall`` part, sent when its last token is due. With ``alt=sse``
each response is a ``data:`` frame and the body's end is the stream's; without it the
responses are the elements of one JSON array, written as they are made.
"""

from __future__ import annotations

import json
import time
from typing import Any

from latdoc.lab.sim._call import ApiError, Call
from latdoc.lab.sim._events import answer_text, answer_token, output_text, output_token
from latdoc.lab.sim._writers import StreamWriter, each_token
from latdoc.lab.sim.dialects._stand_in import (
    Authorized,
    Headers,
    Query,
    StandIn,
    effort_tokens,
)

__all__ = [
    "STAND_IN",
    "GeminiWriter",
    "gemini_document",
    "gemini_error",
    "gemini_limit",
    "gemini_messages",
    "gemini_reasoning",
    "shows_thoughts",
    "streams_array",
]

_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_FINISH = {"stop": "STOP", "length": "MAX_TOKENS"}
_OVERLOADED = {
    "code": 503,
    "message": "The model is overloaded. Please try again later.",
    "status": "UNAVAILABLE",
}


class GeminiWriter:
    """``GenerateContentResponse`` s, as server-sent events or one JSON array."""

    def __init__(self, call: Call, call_id: str, stamp: bool, cached_tokens: int) -> None:
        self.call = call
        self.id = call_id
        self.stamp = stamp
        self.cached = cached_tokens
        self.written = 0

    def _frame(self, obj: dict[str, Any]) -> bytes:
        if self.stamp:
            obj["lab_t_ns"] = time.perf_counter_ns()
        data = json.dumps(obj, separators=(",", ":")).encode()
        first = self.written == 0
        self.written += 1
        if self.call.json_array:
            return data if first else b"\n,\r\n" + data
        return b"data: " + data + b"\r\n\r\n"

    def response(
        self, parts: list[dict[str, Any]], answered: int, thought: int, finish: str | None = None
    ) -> dict[str, Any]:
        """One response: its parts, the answer and thinking tokens so far, its finish."""
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        prompt = self.call.prompt_tokens
        usage: dict[str, Any] = {"promptTokenCount": prompt}
        if answered:
            usage["candidatesTokenCount"] = answered
        usage["totalTokenCount"] = prompt + answered + thought
        if thought:
            usage["thoughtsTokenCount"] = thought
        if self.cached:
            usage["cachedContentTokenCount"] = self.cached
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": self.call.model,
            "responseId": self.id,
        }

    def opening(self) -> bytes:
        return b"[" if self.call.json_array else b""

    def tokens(self, first: int, count: int) -> bytes:
        return each_token(self, first, count)

    def token(self, k: int) -> bytes:
        call = self.call
        thinking = call.reasoning_tokens
        if k < thinking:
            if not call.reasoning_shown:
                return b""
            part = {"text": output_token(k), "thought": True}
            return self._frame(self.response([part], 0, k + 1))
        k -= thinking
        if call.tool_name is None:
            return self._frame(self.response([{"text": answer_token(call, k)}], k + 1, thinking))
        if k < call.output_tokens - 1:
            return b""
        called = {"name": call.tool_name, "args": {"words": output_text(call.output_tokens)}}
        return self._frame(self.response([{"functionCall": called}], k + 1, thinking))

    def closing(self, usage: dict[str, Any], truth: dict[str, Any] | None) -> list[bytes]:
        call = self.call
        end = self.response(
            [{"text": ""}], call.output_tokens, call.reasoning_tokens, _FINISH[call.finish_reason]
        )
        if truth:
            end["lab"] = truth
        return [self._frame(end) + (b"\n]" if call.json_array else b"")]

    def malformed(self) -> bytes:
        if self.call.json_array:
            return (b"" if self.written == 0 else b"\n,\r\n") + b'{"candidates":[{"content":}]}'
        return b'data: {"candidates":[{"content":}]}\r\n\r\n'

    def overloaded(self) -> bytes:
        return self._frame({"error": dict(_OVERLOADED)}) + (b"\n]" if self.call.json_array else b"")


def gemini_error(error: ApiError) -> bytes:
    """The error as Google words it: ``{"error": {"code", "message", "status"}}``."""
    status = _STATUS.get(error.status, "INTERNAL" if error.status >= 500 else "FAILED_PRECONDITION")
    body = {"error": {"code": error.status, "message": error.message, "status": status}}
    return json.dumps(body).encode()


def _check_key(header: Headers, authorized: Authorized) -> None:
    """``x-goog-api-key`` (or a bearer token), refused as Google refuses it."""
    key = header(b"x-goog-api-key")
    given = header(b"authorization") if key is None else b"Bearer " + key
    if authorized(given):
        return
    if given is None:
        raise ApiError(
            403,
            "Method doesn't allow unregistered callers (callers without established "
            "identity). Please use API Key or other form of API consumer identity to call "
            "this API.",
        )
    raise ApiError(400, "API key not valid. Please pass a valid API key.")


def _field(obj: dict[Any, Any], name: str) -> Any:
    """A field by its JSON name (``maxOutputTokens``) or its proto name
    (``max_output_tokens``): Google's JSON parser takes either."""
    if name in obj:
        return obj[name]
    return obj.get("".join(f"_{c.lower()}" if c.isupper() else c for c in name))


def gemini_messages(data: dict[str, object]) -> object:
    """``systemInstruction`` and ``contents`` as chat messages, their parts' text joined."""
    contents = data.get("contents")
    if not isinstance(contents, list):
        return contents
    messages: list[object] = []
    system = _field(data, "systemInstruction")
    if isinstance(system, dict):
        messages.append({"role": "system", "content": _text(system)})
    for content in contents:
        if not isinstance(content, dict):
            messages.append(content)
            continue
        role = "assistant" if content.get("role") == "model" else "user"
        messages.append({"role": role, "content": _text(content)})
    return messages


def _text(content: dict[Any, Any]) -> str:
    parts = content.get("parts")
    if not isinstance(parts, list):
        raise ApiError(400, "Invalid value at 'contents.parts': a list of parts is required.")
    return "".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _generation(data: dict[str, object]) -> dict[Any, Any]:
    config = _field(data, "generationConfig")
    return config if isinstance(config, dict) else {}


def _thinking(data: dict[str, object]) -> dict[Any, Any]:
    thinking = _field(_generation(data), "thinkingConfig")
    return thinking if isinstance(thinking, dict) else {}


def gemini_reasoning(data: dict[str, object], medium: int) -> int:
    """``thinkingBudget``: 0 thinks not at all, a positive budget at most that, -1 or
    none as the model likes; ``thinkingLevel`` as an effort."""
    thinking = _thinking(data)
    level = _field(thinking, "thinkingLevel")
    if isinstance(level, str):
        return effort_tokens(level.lower(), medium)
    budget = _field(thinking, "thinkingBudget")
    if budget is None or budget == -1:
        return medium
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        raise ApiError(400, "thinkingBudget must be -1, 0 or a positive number of tokens.")
    return min(medium, budget)


def shows_thoughts(data: dict[str, object]) -> bool:
    """Whether ``thinkingConfig.includeThoughts`` asks for the thinking to stream."""
    return _field(_thinking(data), "includeThoughts") is True


def gemini_limit(data: dict[str, object]) -> tuple[str, object]:
    return "generationConfig.maxOutputTokens", _field(_generation(data), "maxOutputTokens")


def streams_array(query: Query) -> bool:
    """Without ``alt=sse`` the stream is one JSON array."""
    return "sse" not in query.get("alt", [])


def _writer(call: Call, number: int, stamp: bool, cached_tokens: int) -> StreamWriter:
    return GeminiWriter(call, f"lab-response-{number}", stamp, cached_tokens)


def gemini_document(
    call: Call, number: int, usage: dict[str, Any], cached: int
) -> dict[str, object]:
    """A whole ``GenerateContentResponse``."""
    writer = GeminiWriter(call, f"lab-response-{number}", False, cached)
    return writer.response(
        [{"text": answer_text(call)}],
        call.output_tokens,
        call.reasoning_tokens,
        _FINISH[call.finish_reason],
    )


STAND_IN = StandIn(
    name="gemini",
    path="/v1beta/models/{model}:streamGenerateContent",
    also_paths=("/v1/models/{model}:streamGenerateContent",),
    messages=gemini_messages,
    writer=_writer,
    document=gemini_document,
    reasoning=gemini_reasoning,
    prompt_param="contents",
    streams=True,
    usage_always=True,
    check_key=_check_key,
    error_body=gemini_error,
    output_limit=gemini_limit,
    json_array=streams_array,
    reasoning_shown=shows_thoughts,
)
