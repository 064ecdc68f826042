"""The answer's own text, kept as it streams: what a conversation carries to its next
turn, and what a check of the answer reads (the probe's trace keeps only each chunk's
size)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from latdoc.probe import EventHook, parse_event
from latdoc.probe.dialects import DialectSpec


def answer_text(
    into: list[str], then: EventHook | None = None, *, dialect: DialectSpec | None = None
) -> Callable[[Any, int], None]:
    """An event hook that appends each piece of the answer's text to ``into``, and hands
    every event on to ``then`` first.

    Without ``dialect``, the events are read as OpenAI's (chat deltas, or a completion's
    text). With one, as that dialect's parser reads them: the answer an event carries
    (its text, or a tool call's), not its reasoning, which the parser puts first."""

    def hook(event: Any, t_ns: int) -> None:
        if then is not None:
            then(event, t_ns)
        if not isinstance(event, dict):
            return
        if dialect is not None:
            info = parse_event(event, dialect)
            if info.output_chars:
                into.append(info.text[info.reasoning_chars :])
            return
        for choice in event.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            text = delta.get("content") if isinstance(delta, dict) else choice.get("text")
            if isinstance(text, str):
                into.append(text)

    return hook


def tool_calls_of(
    calls: dict[object, dict[str, str]], dialect: DialectSpec, then: EventHook | None = None
) -> Callable[[Any, int], None]:
    """An event hook that keeps each tool call a stream of ``dialect`` sends, by its place
    in the answer: its ``id``, ``name`` and the text of its ``arguments``, as the dialect's
    parser reads them; it hands every event on to ``then`` first. What an agent puts back
    in the conversation to answer the call."""

    def hook(event: Any, t_ns: int) -> None:
        if then is not None:
            then(event, t_ns)
        if not isinstance(event, dict):
            return
        for part in parse_event(event, dialect).tool_parts:
            place: object = part.place if part.place is not None else ("whole", len(calls))
            kept = calls.setdefault(place, {"id": "", "name": "", "arguments": ""})
            if part.call_id:
                kept["id"] = part.call_id
            if part.name and not kept["name"]:
                kept["name"] = part.name
            kept["arguments"] += part.arguments

    return hook
