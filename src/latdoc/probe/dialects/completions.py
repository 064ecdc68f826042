"""OpenAI (legacy) completions (``POST /completions``): the prompt as one text, the
messages' contents joined by blank lines; its events are chat's (:mod:`.chat`), and
it has no reasoning effort.
"""

from __future__ import annotations

from typing import Any

from latdoc.probe.dialects._spec import (
    BY_MAX_TOKENS,
    BY_MODEL,
    BY_PROMPT,
    STREAMING,
    USAGE_ASKED,
    DialectSpec,
    Messages,
    Route,
    bearer_auth,
)
from latdoc.probe.dialects.chat import parse_chat_event

__all__ = ["SPEC"]


def _body(model: str, messages: Messages, max_tokens: int, include_usage: bool) -> dict[str, Any]:
    prompt = "\n\n".join(m["content"] for m in messages)
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "stream": True,
        "prompt": prompt,
    }
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    return body


SPEC = DialectSpec(
    name="completions",
    title="OpenAI completions",
    route=Route("/completions"),
    key_variable="OPENAI_API_KEY",
    auth_headers=bearer_auth,
    body=_body,
    body_fields={
        "model": BY_MODEL,
        "prompt": BY_PROMPT,
        "stream": STREAMING,
        "stream_options": USAGE_ASKED,
        "max_tokens": BY_MAX_TOKENS,
    },
    parse=parse_chat_event,
    end_marker="[DONE] or a finish_reason",
    otel_operation="text_completion",
    prompt_fields=("prompt",),
    usage_option={"stream_options": {"include_usage": True}},
)
