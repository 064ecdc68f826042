"""Reasoning a model writes into its answer text between tags: :class:`ThinkTags`.

MiniMax's chat completions (unless asked for ``reasoning_split``), DeepSeek-R1 on some
deployments, and a vLLM or SGLang served without a reasoning parser stream a reasoning
model's thinking as answer text: ``<think>`` (MiniMax-M3: ``<mm:think>``), the
thinking, ``</think>``, then the answer. Read as answer, its first token would be the
first thinking token and the thinking's time would be charged to decode; read here,
it is reasoning, timed as ``reasoning_content`` is.

The reader is on for every stream, whatever the dialect or provider: only an answer
whose text *starts* with an opening tag (after white space) is read so, and no
answer that does not is changed, so a stream that never thinks in tags reads exactly
as before, and a preset need not know which of its models do. The tags may arrive
split across events (``<thi`` + ``nk>``); until an answer's first text says whether it
opens a tag, it counts as answer (as it always did) and, when it proves to be the
tag's start, the caller moves it to the reasoning. White space after the closing tag
is the thinking's too, so the answer's first token is its first word. A tag never
closed leaves the whole answer reasoning, as a stream cut while thinking is.
"""

from __future__ import annotations

__all__ = ["THINK_TAGS", "ThinkTags"]

THINK_TAGS = (("<think>", "</think>"), ("<mm:think>", "</mm:think>"))
"""The tags that open and close thinking in an answer's text."""

_OPENING, _THINKING, _CLOSING, _ANSWER = range(4)


class ThinkTags:
    """Splits one stream's answer text, event by event, into thinking and answer."""

    __slots__ = ("_close", "_held", "_state", "_tail")

    def __init__(self) -> None:
        self._state = _OPENING
        self._held = ""
        """The answer's text so far, while it may still be an opening tag's start."""
        self._tail = ""
        """The thinking's last characters, where a closing tag may have begun."""
        self._close = ""

    @property
    def done(self) -> bool:
        """Whether every later text is answer: the answer began, or it opened no tag."""
        return self._state == _ANSWER

    def split(self, text: str) -> tuple[int, int, bool]:
        """Of the next event's answer ``text``: the characters of thinking, those of the
        answer, and whether the earlier events' text, counted as answer while it could
        still be a tag's start, was the opening tag (then thinking too)."""
        if self._state == _OPENING:
            return self._open(text)
        if self._state == _THINKING:
            return *self._think(text), False
        if self._state == _CLOSING:
            return *self._after(text, len(text)), False
        return 0, len(text), False

    def _open(self, text: str) -> tuple[int, int, bool]:
        held = self._held + text
        start = held.lstrip()
        for opening, closing in THINK_TAGS:
            if start.startswith(opening):
                self._state, self._close, self._held = _THINKING, closing, ""
                rest = start[len(opening) :]
                _, answer = self._think(rest) if rest else (0, 0)
                return len(text) - answer, answer, len(held) > len(text)
        if not start or any(o.startswith(start) for o, _ in THINK_TAGS):
            self._held = held
            return 0, len(text), False
        self._state, self._held = _ANSWER, ""
        return 0, len(text), False

    def _think(self, text: str) -> tuple[int, int]:
        seen = self._tail + text
        at = seen.find(self._close)
        if at < 0:
            self._tail = seen[-(len(self._close) - 1) :]
            return len(text), 0
        self._tail = ""
        after = seen[at + len(self._close) :]
        return self._after(after, len(text))

    def _after(self, after: str, chars: int) -> tuple[int, int]:
        """``after`` is what follows the closing tag in an event of ``chars``
        characters: white space before the answer is the thinking's."""
        answer = after.lstrip()
        if not answer:
            self._state = _CLOSING
            return chars, 0
        self._state = _ANSWER
        return chars - len(answer), len(answer)
