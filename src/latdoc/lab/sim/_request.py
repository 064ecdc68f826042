"""Validating a completion request the way an OpenAI (or Anthropic) server does.

:func:`parse_call` turns a request body into a :class:`Call` (what drives the
simulation) or raises :class:`ApiError` carrying OpenAI's error JSON (each API words
it its own way: :attr:`~latdoc.lab.sim.dialects.StandIn.error_body`), including
``context_length_exceeded`` when the prompt and the requested output do not fit.
What differs between APIs (where the prompt is, how reasoning is asked for) is read
from the route's :class:`~latdoc.lab.sim.dialects.StandIn`; a prompt given as
messages is counted as chat messages are; a request with ``tools`` (Bedrock's
``toolConfig.tools``) is answered with a call to its first tool, unless its last turn
hands back a tool's result: that is answered in text, as an agent's loop needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable

from latdoc.lab.sim._call import ApiError, Call, FinishReason
from latdoc.lab.sim._config import LabConfig
from latdoc.lab.sim._tokenizer import (
    chat_prompt_token_list,
    chat_prompt_tokens,
    count_tokens,
    message_text,
    pieces,
    tokenize,
)
from latdoc.lab.sim.dialects import Query, StandIn

REPEAT = "Repeat exactly:"
"""How a prompt asks for a text back: the lab answers the rest of it
(:attr:`LabConfig.wrong_models <latdoc.lab.sim.LabConfig>` answer it reversed)."""


def parse_call(
    body: bytes,
    api: StandIn,
    config: LabConfig,
    path_model: str | None = None,
    query: Query | None = None,
) -> Call:
    """Validate a request body to ``api`` like its server would; raise :class:`ApiError`.
    ``path_model`` is the model the route names, which a body's ``model`` cannot change;
    ``query`` the request's query parameters."""
    try:
        data = json.loads(body)
    except ValueError:
        raise ApiError(400, "We could not parse the JSON body of your request.") from None
    if not isinstance(data, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    model = data.get("model") if path_model is None else path_model
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
    if api.messages is None:
        prompt_tokens = _completion_prompt(data)
    else:
        prompt_tokens = _chat_prompt({"messages": api.messages(data)})
    stream = True if api.streams else data.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise ApiError(400, "'stream' must be a boolean.", param="stream")
    options = data.get("stream_options")
    include_usage = api.usage_always or (
        isinstance(options, dict) and options.get("include_usage") is True
    )
    if api.requires_max_tokens and data.get("max_tokens") is None:
        raise ApiError(400, "max_tokens: Field required", param="max_tokens")
    max_tokens = _output_limit(data, api, prompt_tokens, config)
    own = _repeated(data, api, wrong=model in config.wrong_models)
    answer = config.answer_tokens if own is None else len(own)
    finish_reason: FinishReason
    if answer is not None and answer <= max_tokens:
        output_tokens, finish_reason = answer, "stop"
    else:
        output_tokens, finish_reason = max_tokens, "length"
    prompt = _prompt_sequence(data, api.messages) if config.prefix_cache else None
    thinks = config.latency_for(model).reasoning_tokens
    return Call(
        model,
        prompt_tokens,
        max_tokens,
        output_tokens,
        finish_reason,
        bool(stream),
        include_usage,
        prompt,
        0 if api.reasoning is None else api.reasoning(data, thinks),
        None if _after_tool_result(data) else _tool_name(_tools_of(data)),
        api.json_array is not None and api.json_array(query or {}),
        api.reasoning_shown is None or api.reasoning_shown(data),
        own,
        config.reasoning_in_text,
    )


def _repeated(data: dict[str, object], api: StandIn, *, wrong: bool) -> tuple[str, ...] | None:
    """The answer's tokens when the prompt (a chat's last message, a completion's text)
    asks for a text back, reversed by a model that answers wrongly; ``None`` otherwise,
    and for nothing to repeat."""
    if api.messages is None:
        prompt = data.get("prompt")
        text = prompt if isinstance(prompt, str) else ""
    else:
        messages = api.messages(data)
        last = messages[-1] if isinstance(messages, list) and messages else None
        text = message_text(last.get("content")) if isinstance(last, dict) else ""
    if not text.startswith(REPEAT):
        return None
    wanted = text.removeprefix(REPEAT).strip()
    return tuple(pieces(wanted[::-1] if wrong else wanted)) or None


def _after_tool_result(data: dict[str, object]) -> bool:
    """Whether the conversation's last turn hands back a tool's result (a chat ``tool``
    message, a Responses ``function_call_output``, an Anthropic ``tool_result`` block, a
    Gemini ``functionResponse``, a Bedrock ``toolResult``): then the model answers in
    text, as an agent's loop needs to end."""
    turns = next(
        (v for key in ("messages", "input", "contents") if isinstance(v := data.get(key), list)),
        None,
    )
    if not turns or not isinstance(last := turns[-1], dict):
        return False
    if last.get("role") == "tool" or last.get("type") == "function_call_output":
        return True
    parts = last.get("content", last.get("parts"))
    return isinstance(parts, list) and any(
        isinstance(p, dict)
        and (p.get("type") == "tool_result" or "functionResponse" in p or "toolResult" in p)
        for p in parts
    )


def _tools_of(data: dict[str, object]) -> object:
    """The request's tool list: ``tools``, or Bedrock's ``toolConfig.tools``."""
    config = data.get("toolConfig")
    return config.get("tools") if isinstance(config, dict) else data.get("tools")


def _tool_name(tools: object) -> str | None:
    if not isinstance(tools, list) or not tools or not isinstance(tools[0], dict):
        return None
    tool = tools[0]
    declared = tool.get("functionDeclarations")
    if isinstance(declared, list) and declared and isinstance(declared[0], dict):
        tool = declared[0]  # Gemini's: functions declared inside a tool
    spec = tool.get("toolSpec")
    if isinstance(spec, dict):
        tool = spec  # Bedrock's
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) and name else None


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


def _prompt_sequence(
    data: dict[str, object], read_messages: Callable[[dict[str, object]], object] | None
) -> tuple[Hashable, ...]:
    """The prompt's tokens (already validated by the counting functions)."""
    if read_messages is not None:
        messages = read_messages(data)
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
    data: dict[str, object], api: StandIn, prompt_tokens: int, config: LabConfig
) -> int:
    where = api.prompt_param
    requested = _max_tokens(data, api)
    limit = config.max_context_tokens
    if limit is None:
        return config.default_max_tokens if requested is None else requested
    if requested is None:
        if prompt_tokens < limit:
            return min(config.default_max_tokens, limit - prompt_tokens)
        requested = 0
    if prompt_tokens + requested > limit:
        raise ApiError(
            400,
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{prompt_tokens + requested} tokens ({prompt_tokens} in the {where}, {requested} "
            f"in the completion). Please reduce the length of the {where} or completion.",
            code="context_length_exceeded",
            param=where,
        )
    return requested


def _max_tokens(data: dict[str, object], api: StandIn) -> int | None:
    given = (
        [
            (name, data.get(name))
            for name in ("max_completion_tokens", "max_tokens", "max_output_tokens")
        ]
        if api.output_limit is None
        else [api.output_limit(data)]
    )
    for name, value in given:
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ApiError(400, f"'{name}' must be an integer >= 1.", param=name)
        return value
    return None
