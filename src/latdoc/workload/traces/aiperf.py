"""NVIDIA AIPerf's multi-turn conversations (its ``multi_turn`` custom dataset): JSON
Lines, one conversation a line::

    {"session_id": "chat_1", "turns": [{"role": "system", "text": "Be terse."},
     {"text": "What is machine learning?", "output_length": 50},
     {"text": "Give me an example.", "delay": 1000}]}

Each turn is a request of its session, sent with the history so far (the endpoint's own
answers in it) after the last turn's answer and its ``delay`` (ms, the user's think
time); ``output_length`` sizes the answer asked for (64 where not given, capped by
``--max-tokens``). A leading system turn of text alone is the conversation's system
prompt, as AIPerf reads it, not a turn. A turn's ``timestamp`` is not used: the turns of
a conversation follow each other's answers. A turn's tokens are its words' (about 0.75
of a token each), an estimate: the endpoint's own usage is what the report reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.workload.traces._format import (
    Lines,
    TraceFormat,
    TraceRequest,
    count,
    json_lines,
    object_with,
)

DEFAULT_OUTPUT = 64
"""The answer asked for where a turn gives no ``output_length``."""
_MAX_DELAY_MS = 3_600_000


def _sniff(first: str) -> bool:
    return object_with(first, "session_id", "turns")


def _read(lines: Lines, source: str) -> Iterator[TraceRequest]:
    for number, where, obj in json_lines(lines, source):
        session, turns = obj.get("session_id"), obj.get("turns")
        if not isinstance(session, str | int) or isinstance(session, bool):
            raise UsageError(Message("{where}: session_id must be a name or a number", where=where))
        if not isinstance(turns, list) or not turns:
            raise UsageError(Message("{where}: turns must be a list of turns", where=where))
        system = _system(turns[0])
        said = turns[1:] if system is not None else turns
        for k, turn in enumerate(said):
            yield _turn(turn, number, f"{where} (turn {k + 1})", str(session), k, system)


def _system(first: Any) -> str | None:
    """A leading system turn of text alone: the conversation's system prompt."""
    if not isinstance(first, dict) or first.get("role") != "system":
        return None
    text = first.get("text")
    if not isinstance(text, str) or set(first) - {"role", "text"}:
        return None
    return text


def _turn(
    turn: Any, number: int, where: str, session: str, k: int, system: str | None
) -> TraceRequest:
    text = turn.get("text") if isinstance(turn, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise UsageError(Message("{where}: a turn needs its text", where=where))
    assert isinstance(turn, dict)
    delay = turn.get("delay", 0)
    if (
        isinstance(delay, bool)
        or not isinstance(delay, int | float)
        or not (0 <= delay <= _MAX_DELAY_MS)
    ):
        raise UsageError(
            Message("{where}: delay must be a number of ms from 0 to an hour", where=where)
        )
    return TraceRequest(
        number,
        None,
        max(1, round(len(text.split()) / 0.75)),
        count(turn.get("output_length", DEFAULT_OUTPUT), where, "output_length", least=1),
        session=session,
        turn=k,
        text=text,
        delay_ms=float(delay),
        system=system,
    )


FORMAT = TraceFormat("aiperf", _sniff, _read)
