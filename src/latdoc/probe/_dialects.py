"""API dialects: how to ask for a streamed completion, and how to read each event.

OpenAI chat completions and (legacy) completions, as served by OpenAI, vLLM,
llama.cpp, SGLang, Ollama and most gateways. An event's output is the text it
carries in ``delta.content``, ``delta.reasoning_content``/``delta.reasoning`` or
``text``; a role-only or empty delta carries none and never counts as a token.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from latdoc.errors import UsageError


class Dialect(enum.StrEnum):
    CHAT = "chat"
    COMPLETIONS = "completions"

    @property
    def path(self) -> str:
        return "/chat/completions" if self is Dialect.CHAT else "/completions"


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_prompt_tokens: int | None


@dataclass(frozen=True, slots=True)
class EventInfo:
    """What one decoded stream event says."""

    output_chars: int = 0
    finish_reason: str | None = None
    usage: Usage | None = None
    error: str | None = None
    server_timing: dict[str, float] | None = None


RESERVED_BODY_FIELDS = {
    "model": "--model sets it",
    "messages": "the prompt options set it",
    "prompt": "the prompt options set it",
    "stream": "latdoc always streams",
    "stream_options": "latdoc asks for usage itself",
    "max_tokens": "--max-tokens sets it",
}
"""Request fields latdoc writes itself, and why each may not be given again."""


def check_extra_body(extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` as fields to add to every request body; raises :class:`UsageError` for
    one that latdoc writes itself (the model, the prompt, streaming, the output length)."""
    if not isinstance(extra, Mapping):
        raise UsageError(f"--extra-body must be a JSON object, got {type(extra).__name__}")
    taken = [f"{k} ({RESERVED_BODY_FIELDS[k]})" for k in sorted(extra) if k in RESERVED_BODY_FIELDS]
    if taken:
        raise UsageError(f"--extra-body may not set {', '.join(taken)}")
    return dict(extra)


Prompt = str | Sequence[Mapping[str, str]]
"""The user's text, or a conversation as chat messages (``role`` and ``content``)."""


def request_body(
    dialect: Dialect,
    model: str,
    prompt: Prompt,
    max_tokens: int,
    *,
    include_usage: bool,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a streamed request; ``extra`` fields (checked by
    :func:`check_extra_body`) are added to it, such as ``ignore_eos`` or ``temperature``."""
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": True}
    messages = (
        [{"role": "user", "content": prompt}]
        if isinstance(prompt, str)
        else [dict(m) for m in prompt]
    )
    if dialect is Dialect.CHAT:
        body["messages"] = messages
    else:
        body["prompt"] = "\n\n".join(m["content"] for m in messages)
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if extra:
        body.update(check_extra_body(extra))
    return body


def parse_event(obj: Any) -> EventInfo:
    """Interpret one JSON event of either dialect."""
    if not isinstance(obj, dict):
        return EventInfo(error=f"event is a JSON {type(obj).__name__}, not an object")
    error = obj.get("error")
    if error is not None:
        message = error.get("message") if isinstance(error, dict) else None
        return EventInfo(error=str(message or error))
    chars = 0
    finish: str | None = None
    choices = obj.get("choices")
    if isinstance(choices, list):
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            chars += _choice_chars(choice)
            reason = choice.get("finish_reason")
            if isinstance(reason, str):
                finish = reason
    return EventInfo(
        output_chars=chars,
        finish_reason=finish,
        usage=_usage(obj.get("usage")),
        server_timing=_llamacpp_timings(obj.get("timings")),
    )


def _choice_chars(choice: dict[str, Any]) -> int:
    chars = 0
    delta = choice.get("delta")
    if isinstance(delta, dict):
        for key in ("content", "reasoning_content", "reasoning"):
            value = delta.get(key)
            if isinstance(value, str):
                chars += len(value)
    text = choice.get("text")
    if isinstance(text, str):
        chars += len(text)
    return chars


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    details = raw.get("prompt_tokens_details")
    cached = _int_or_none(details.get("cached_tokens")) if isinstance(details, dict) else None
    return Usage(
        prompt_tokens=_int_or_none(raw.get("prompt_tokens")),
        completion_tokens=_int_or_none(raw.get("completion_tokens")),
        cached_prompt_tokens=cached,
    )


def _llamacpp_timings(raw: Any) -> dict[str, float] | None:
    if not isinstance(raw, dict):
        return None
    out: dict[str, float] = {}
    for key in ("prompt_ms", "predicted_ms", "predicted_per_token_ms"):
        value = raw.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = float(value)
    return out or None


def error_message(body: bytes, content_type: str | None) -> str:
    """A one-line description of an error response body (JSON or HTML or text)."""
    text = body.decode("utf-8", errors="replace").strip()
    if (content_type and "json" in content_type) or text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError:
            pass
        else:
            if isinstance(obj, dict):
                err = obj.get("error", obj)
                if isinstance(err, dict):
                    msg = err.get("message") or err.get("detail") or err.get("type")
                    if msg:
                        return _one_line(str(msg))
                elif isinstance(err, str):
                    return _one_line(err)
    if "<" in text and ">" in text:
        match = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        if match and match.group(1).strip():
            return _one_line(match.group(1))
        text = re.sub(r"<[^>]+>", " ", text)
    return _one_line(text) or "empty body"


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
