"""The answer's own text, kept as it streams: what a conversation carries to its next
turn (the probe's trace keeps only each chunk's size)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from latdoc.probe import EventHook


def answer_text(into: list[str], then: EventHook | None = None) -> Callable[[Any, int], None]:
    """An event hook that appends each piece of the answer's text to ``into`` (chat
    deltas, or a completion's text), and hands every event on to ``then`` first."""

    def hook(event: Any, t_ns: int) -> None:
        if then is not None:
            then(event, t_ns)
        if not isinstance(event, dict):
            return
        for choice in event.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            text = delta.get("content") if isinstance(delta, dict) else choice.get("text")
            if isinstance(text, str):
                into.append(text)

    return hook
