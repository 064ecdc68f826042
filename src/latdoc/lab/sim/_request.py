"""Validating a completion request the way an OpenAI server does.

:func:`parse_call` turns a request body into a :class:`Call` (what drives the
simulation) or raises :class:`ApiError` carrying OpenAI's error JSON, including
``context_length_exceeded`` when the prompt and the requested output do not fit.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal

from latdoc.lab.sim._config import LabConfig
from latdoc.lab.sim._tokenizer import (
    chat_prompt_token_list,
    chat_prompt_tokens,
    count_tokens,
    tokenize,
)

__all__ = ["ApiError", "Call", "FinishReason", "Kind", "parse_call"]

Kind = Literal["chat", "completions"]
FinishReason = Literal["stop", "length"]


class ApiError(Exception):
    """A request the endpoint refuses, with its OpenAI-style error body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type_: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = json.dumps(
            {"error": {"message": message, "type": type_, "param": param, "code": code}}
        ).encode()


@dataclass(frozen=True, slots=True)
class Call:
    """A validated completion request, reduced to what drives the simulation.

    ``max_tokens`` is the output limit the request gets (what it asked for, or the
    default); ``output_tokens`` what is generated within it, ending with
    ``finish_reason``. ``prompt`` is the prompt's token sequence, kept only when the
    prefix cache needs it.
    """

    kind: Kind
    model: str
    prompt_tokens: int
    max_tokens: int
    output_tokens: int
    finish_reason: FinishReason
    stream: bool
    include_usage: bool
    prompt: tuple[Hashable, ...] | None = None


def parse_call(body: bytes, kind: Kind, config: LabConfig) -> Call:
    """Validate a request body like an OpenAI server would; raise :class:`ApiError`."""
    try:
        data = json.loads(body)
    except ValueError:
        raise ApiError(400, "We could not parse the JSON body of your request.") from None
    if not isinstance(data, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    model = data.get("model")
    if model is None:
        raise ApiError(404, "You must provide a model parameter.", code="model_not_found")
    if not isinstance(model, str) or model not in config.models:
        raise ApiError(
            404,
            f"The model `{model}` does not exist or you do not have access to it.",
            code="model_not_found",
            param="model",
        )
    if config.reject_stream_options and "stream_options" in data:
        raise ApiError(
            400, "Unrecognized request argument supplied: stream_options", param="stream_options"
        )
    prompt_tokens = _chat_prompt(data) if kind == "chat" else _completion_prompt(data)
    stream = data.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise ApiError(400, "'stream' must be a boolean.", param="stream")
    options = data.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    max_tokens = _output_limit(data, kind, prompt_tokens, config)
    answer = config.answer_tokens
    finish_reason: FinishReason
    if answer is not None and answer <= max_tokens:
        output_tokens, finish_reason = answer, "stop"
    else:
        output_tokens, finish_reason = max_tokens, "length"
    prompt = _prompt_sequence(data, kind) if config.prefix_cache else None
    return Call(
        kind,
        model,
        prompt_tokens,
        max_tokens,
        output_tokens,
        finish_reason,
        bool(stream),
        include_usage,
        prompt,
    )


def _chat_prompt(data: dict[str, object]) -> int:
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "'messages' must be a non-empty array.", param="messages")
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise ApiError(400, "Each message must be an object with a 'role'.", param="messages")
    try:
        return chat_prompt_tokens(messages)
    except TypeError as exc:
        raise ApiError(400, f"Invalid message: {exc}.", param="messages") from None


def _completion_prompt(data: dict[str, object]) -> int:
    prompt = data.get("prompt")
    if isinstance(prompt, str):
        return count_tokens(prompt)
    if isinstance(prompt, list) and prompt:
        if all(isinstance(p, str) for p in prompt):
            return sum(count_tokens(p) for p in prompt)
        if all(isinstance(p, int) and not isinstance(p, bool) for p in prompt):
            return len(prompt)
    raise ApiError(
        400, "'prompt' must be a string, an array of strings or of token ids.", param="prompt"
    )


def _prompt_sequence(data: dict[str, object], kind: Kind) -> tuple[Hashable, ...]:
    """The prompt's tokens (already validated by the counting functions)."""
    if kind == "chat":
        messages = data["messages"]
        assert isinstance(messages, list)
        return tuple(chat_prompt_token_list(messages))
    prompt = data["prompt"]
    if isinstance(prompt, str):
        return tuple(tokenize(prompt))
    assert isinstance(prompt, list)
    if all(isinstance(p, str) for p in prompt):
        return tuple(token for part in prompt for token in tokenize(part))
    return tuple(prompt)


def _output_limit(
    data: dict[str, object], kind: Kind, prompt_tokens: int, config: LabConfig
) -> int:
    requested = _max_tokens(data)
    limit = config.max_context_tokens
    if limit is None:
        return config.default_max_tokens if requested is None else requested
    if requested is None:
        if prompt_tokens < limit:
            return min(config.default_max_tokens, limit - prompt_tokens)
        requested = 0
    if prompt_tokens + requested > limit:
        where = "messages" if kind == "chat" else "prompt"
        raise ApiError(
            400,
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{prompt_tokens + requested} tokens ({prompt_tokens} in the {where}, {requested} "
            f"in the completion). Please reduce the length of the {where} or completion.",
            code="context_length_exceeded",
            param=where,
        )
    return requested


def _max_tokens(data: dict[str, object]) -> int | None:
    for name in ("max_completion_tokens", "max_tokens"):
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ApiError(400, f"'{name}' must be an integer >= 1.", param=name)
        return value
    return None
