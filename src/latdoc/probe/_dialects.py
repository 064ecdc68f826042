"""API dialects: how to ask for a streamed answer, and how to read each event.

- ``chat`` and ``completions``: OpenAI chat completions and (legacy) completions,
  as served by OpenAI, vLLM, llama.cpp, SGLang, Ollama and most gateways
  (:mod:`._chat_events`);
- ``anthropic``: Anthropic's Messages API, ``x-api-key`` and ``anthropic-version``
  headers, ``ANTHROPIC_API_KEY`` (:mod:`._anthropic_events`);
- ``responses``: OpenAI's Responses API (:mod:`._responses_events`).

Each event becomes an :class:`EventInfo`: its answer and reasoning characters, its
usage, finish reason or error. An event of another dialect says which one the
endpoint speaks, so a wrong ``--api`` is named rather than timed.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from latdoc.errors import UsageError
from latdoc.probe._anthropic_events import parse_anthropic_event
from latdoc.probe._chat_events import parse_chat_event
from latdoc.probe._events import EventInfo, Usage
from latdoc.probe._responses_events import parse_responses_event

__all__ = [
    "ANTHROPIC_VERSION",
    "RESERVED_BODY_FIELDS",
    "THINKING_BUDGETS",
    "Dialect",
    "EventInfo",
    "Prompt",
    "Usage",
    "check_extra_body",
    "dialect_hint",
    "error_message",
    "parse_event",
    "request_body",
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


class Dialect(enum.StrEnum):
    CHAT = "chat"
    COMPLETIONS = "completions"
    ANTHROPIC = "anthropic"
    RESPONSES = "responses"

    @property
    def path(self) -> str:
        return _PATHS[self]

    @property
    def key_variable(self) -> str:
        """The environment variable the API key is read from by default."""
        return "ANTHROPIC_API_KEY" if self is Dialect.ANTHROPIC else "OPENAI_API_KEY"

    @property
    def end_marker(self) -> str:
        """What ends a complete stream in this dialect, for messages."""
        return _END_MARKERS[self]

    def reasoning_fields(self, effort: str) -> dict[str, Any]:
        """Request fields that ask for ``effort`` (``none``, ``minimal``, ``low``,
        ``medium``, ``high``): chat's ``reasoning_effort``, the Responses
        ``reasoning.effort``, Anthropic's ``thinking`` (disabled for none and minimal,
        else a budget of :data:`THINKING_BUDGETS` tokens)."""
        if effort not in THINKING_BUDGETS:
            raise UsageError(f"unknown reasoning effort {effort!r}: {', '.join(THINKING_BUDGETS)}")
        if self is Dialect.ANTHROPIC:
            budget = THINKING_BUDGETS[effort]
            if budget is None:
                return {"thinking": {"type": "disabled"}}
            return {"thinking": {"type": "enabled", "budget_tokens": budget}}
        if self is Dialect.RESPONSES:
            return {"reasoning": {"effort": effort}}
        if self is Dialect.COMPLETIONS:
            raise UsageError("the completions dialect has no reasoning effort")
        return {"reasoning_effort": effort}

    def auth_headers(self, api_key: str | None) -> list[tuple[bytes, bytes]]:
        """The headers that carry ``api_key`` (and the API version) in this dialect."""
        if self is Dialect.ANTHROPIC:
            version = [(b"anthropic-version", ANTHROPIC_VERSION.encode())]
            return version + ([(b"x-api-key", api_key.encode())] if api_key else [])
        return [(b"authorization", b"Bearer " + api_key.encode())] if api_key else []


_PATHS = {
    Dialect.CHAT: "/chat/completions",
    Dialect.COMPLETIONS: "/completions",
    Dialect.ANTHROPIC: "/messages",
    Dialect.RESPONSES: "/responses",
}
_END_MARKERS = {
    Dialect.CHAT: "[DONE] or a finish_reason",
    Dialect.COMPLETIONS: "[DONE] or a finish_reason",
    Dialect.ANTHROPIC: "message_stop or a stop_reason",
    Dialect.RESPONSES: "response.completed",
}
_PARSERS: dict[Dialect, Callable[[Any, str | None], EventInfo]] = {
    Dialect.CHAT: parse_chat_event,
    Dialect.COMPLETIONS: parse_chat_event,
    Dialect.ANTHROPIC: parse_anthropic_event,
    Dialect.RESPONSES: parse_responses_event,
}


RESERVED_BODY_FIELDS = {
    "model": "--model sets it",
    "messages": "the prompt options set it",
    "prompt": "the prompt options set it",
    "stream": "latdoc always streams",
    "stream_options": "latdoc asks for usage itself",
    "max_tokens": "--max-tokens sets it",
    "input": "the prompt options set it",
    "max_output_tokens": "--max-tokens sets it",
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
    :func:`check_extra_body`) are added to it, such as ``ignore_eos``, ``temperature``
    or a reasoning effort. Anthropic takes system messages as its top-level
    ``system``; the Responses API takes the messages as ``input``."""
    if dialect is Dialect.RESPONSES:
        body: dict[str, Any] = {"model": model, "max_output_tokens": max_tokens, "stream": True}
    else:
        body = {"model": model, "max_tokens": max_tokens, "stream": True}
    messages = (
        [{"role": "user", "content": prompt}]
        if isinstance(prompt, str)
        else [dict(m) for m in prompt]
    )
    if dialect is Dialect.CHAT:
        body["messages"] = messages
    elif dialect is Dialect.COMPLETIONS:
        body["prompt"] = "\n\n".join(m["content"] for m in messages)
    elif dialect is Dialect.ANTHROPIC:
        system = [m["content"] for m in messages if m.get("role") == "system"]
        if system:
            body["system"] = "\n\n".join(system)
        body["messages"] = [m for m in messages if m.get("role") != "system"]
    else:
        body["input"] = messages
    if include_usage and dialect in (Dialect.CHAT, Dialect.COMPLETIONS):
        body["stream_options"] = {"include_usage": True}
    if extra:
        body.update(check_extra_body(extra))
    return body


def parse_event(obj: Any, dialect: Dialect = Dialect.CHAT, event: str | None = None) -> EventInfo:
    """Interpret one JSON event of ``dialect``; ``event`` is its SSE ``event:`` name."""
    return _PARSERS[dialect](obj, event)


_HOST_DIALECTS = (("anthropic.com", Dialect.ANTHROPIC),)


def dialect_hint(url: str, dialect: Dialect, status: int | None, message: str = "") -> str | None:
    """A hint naming the likely dialect when a request to ``url`` in ``dialect`` was
    refused as a request of the wrong API would be: 400 to 405 from a host known for
    another dialect, or a 404 (not about the model) or 405 from any host."""
    host = (urlsplit(url).hostname or "").lower()
    likely = next((d for suffix, d in _HOST_DIALECTS if host.endswith(suffix)), None)
    if likely is not None and likely is not dialect and status in (400, 401, 403, 404, 405):
        return f"{host} speaks the {likely} dialect: try --api {likely}"
    if status == 405 or (status == 404 and "model" not in message.lower()):
        others = ", ".join(str(d) for d in Dialect if d is not dialect)
        return f"no {dialect.path} here: is the base URL right, or is the dialect {others}?"
    return None


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
                    if msg and obj.get("type") == "error" and err.get("type") not in (None, msg):
                        msg = f"{err['type']}: {msg}"  # Anthropic's error body names its type
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
