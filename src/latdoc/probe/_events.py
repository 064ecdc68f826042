"""What one decoded stream event says, in any dialect: :class:`EventInfo` and its :class:`Usage`.

Each dialect's parser (in :mod:`latdoc.probe.dialects`) reduces its events to these,
so the stream state reads one shape. Finish reasons are told in the OpenAI chat
words every layer reads: ``stop`` (the answer ended by itself), ``length`` (cut at
the output limit), ``tool_calls``, ``content_filter``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from latdoc.errors import read_base_resp, status_of_error_type

__all__ = [
    "EventInfo",
    "ToolPart",
    "Usage",
    "base_resp_error",
    "detail_int",
    "error_event",
    "int_or_none",
    "merge_usage",
    "text_or_none",
]


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_prompt_tokens: int | None
    reasoning_tokens: int | None = None
    """Output tokens spent reasoning, as reported (part of ``completion_tokens``)."""


class ToolPart(NamedTuple):
    """What one event carried of one tool call: the call it belongs to, its name if the
    event gave it, and characters of its arguments."""

    place: int | None
    """The call's place in the response, as the dialect numbers it (chat's ``index``, a
    content block's, an output item's); ``None``: the event holds the whole call, a call
    of its own (Gemini's ``functionCall``)."""
    name: str | None = None
    argument_chars: int = 0
    arguments: str = ""
    """The arguments' text the event carried (kept by an agent's replay to answer the
    call; the trace keeps only its size)."""
    call_id: str | None = None
    """The call's id, where the event gives it (``call_…``, ``toolu_…``)."""


class EventInfo(NamedTuple):
    """What one decoded stream event says. A named tuple, not a frozen dataclass: one is
    made for every event read, and a tuple is made in a third of the time."""

    output_chars: int = 0
    """Characters of the answer: text, a tool call's name and arguments, a refusal."""
    tool_chars: int = 0
    """Characters of a tool call's name and arguments (counted in ``output_chars`` too)."""
    reasoning_chars: int = 0
    """Characters of reasoning: ``reasoning_content``, thinking, a reasoning summary."""
    text: str = ""
    """The reasoning and answer text the event carried, for a tokenizer."""
    finish_reason: str | None = None
    usage: Usage | None = None
    error: str | None = None
    error_status: int | None = None
    """The HTTP status the provider gives the error's type (Anthropic's
    ``overloaded_error`` is 529), so retry policies class it as they class the status."""
    server_timing: dict[str, float] | None = None
    response_id: str | None = None
    ends_stream: bool = False
    """The dialect's own end of stream (``message_stop``, ``response.completed``)."""
    unknown: bool = False
    """An event of a type the dialect does not define: skipped, and counted."""
    other_dialect: str | None = None
    """The dialect the event belongs to when it is clearly not this one's."""
    tool_parts: tuple[ToolPart, ...] = ()
    """The tool calls the event carried a part of (a name, arguments); an event that
    names a call without output (the Responses API's ``output_item.added``) has one too."""


def error_event(code: Any, message: Any) -> EventInfo:
    """An error event that names its type (or code) and message: ``type: message``, with
    the HTTP status the provider gives that type, where it has one."""
    text = ": ".join(str(p) for p in (code, message) if p) or "error event without details"
    return EventInfo(
        error=text, error_status=status_of_error_type(code) if isinstance(code, str) else None
    )


def base_resp_error(raw: Any) -> EventInfo | None:
    """MiniMax's ``base_resp``, its error sent with HTTP 200 where other APIs answer with
    an error status: an error with the status its code stands for
    (:func:`~latdoc.errors.read_base_resp`). ``None`` for none, or for its success."""
    failed = read_base_resp(raw)
    return None if failed is None else EventInfo(error=failed.text, error_status=failed.status)


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text_or_none(value: Any) -> str | None:
    """A non-empty string field (a tool's name, a call's id), else ``None``."""
    return value if isinstance(value, str) and value else None


def detail_int(usage: dict[str, Any], details: str, key: str) -> int | None:
    """``usage[details][key]`` as a count (``prompt_tokens_details.cached_tokens``,
    ``output_tokens_details.reasoning_tokens`` ...), ``None`` where either is missing."""
    inner = usage.get(details)
    return int_or_none(inner.get(key)) if isinstance(inner, dict) else None


def merge_usage(old: Usage | None, new: Usage) -> Usage:
    """``new``, with what it leaves out (``None``) kept from ``old``: Anthropic reports
    the prompt at the start and the output at the end."""
    if old is None:
        return new
    return Usage(
        prompt_tokens=_first(new.prompt_tokens, old.prompt_tokens),
        completion_tokens=_first(new.completion_tokens, old.completion_tokens),
        cached_prompt_tokens=_first(new.cached_prompt_tokens, old.cached_prompt_tokens),
        reasoning_tokens=_first(new.reasoning_tokens, old.reasoning_tokens),
    )


def _first(a: int | None, b: int | None) -> int | None:
    return a if a is not None else b
