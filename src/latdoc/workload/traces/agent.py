"""An agent's sessions: JSON Lines, one user turn a line, in the order they were sent::

    {"session": "s1", "turn": 0, "user": "Find the word…", "output_tokens": 64,
     "tool_results": [{"name": "lookup", "content": "…", "ms": 800}]}

A turn is sent with its session's history (the earlier turns, each with the model's
own answer from this replay); where the model calls a tool, the turn's next tool result
is handed back as that tool's answer, after the tool's recorded ``ms``, and the model
is asked again, until it answers in text or the results run out. The sessions replay
as fast as ``--concurrency``'s streams allow, each stream one session at a time: a
turn waits for the last one's answer, so the trace has no times of its own. ``turn``
defaults to the session's count so far, ``tool_results`` to none.
The prompt's tokens are the user's words (about 0.75 of a token each), an estimate: the
endpoint's own usage is what the report reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.workload.traces._format import (
    Lines,
    ToolResult,
    TraceFormat,
    TraceRequest,
    count,
    json_lines,
    object_with,
)


def _sniff(first: str) -> bool:
    return object_with(first, "session", "user")


def _read(lines: Lines, source: str) -> Iterator[TraceRequest]:
    return _turns(lines, source)


def _turns(lines: Lines, source: str) -> Iterator[TraceRequest]:
    turns: dict[str, int] = {}
    for number, where, obj in json_lines(lines, source):
        session, user = obj.get("session"), obj.get("user")
        if not isinstance(session, str | int) or isinstance(session, bool):
            raise UsageError(Message("{where}: session must be a name or a number", where=where))
        if not isinstance(user, str) or not user:
            raise UsageError(Message("{where}: user must be the turn's text", where=where))
        key = str(session)
        turn = count(obj.get("turn", turns.get(key, 0)), where, "turn")
        turns[key] = turn + 1
        yield TraceRequest(
            number,
            None,
            max(1, round(len(user.split()) / 0.75)),
            count(obj.get("output_tokens", 64), where, "output_tokens", least=1),
            session=key,
            turn=turn,
            text=user,
            tool_results=tuple(_results(obj.get("tool_results", []), where)),
        )


def _results(raw: Any, where: str) -> Iterator[ToolResult]:
    if not isinstance(raw, list):
        raise UsageError(Message("{where}: tool_results must be a list", where=where))
    for n, item in enumerate(raw, 1):
        name = item.get("name") if isinstance(item, dict) else None
        content = item.get("content", "") if isinstance(item, dict) else None
        ms = item.get("ms", 0) if isinstance(item, dict) else None
        if (
            not isinstance(name, str)
            or not name
            or not isinstance(content, str)
            or isinstance(ms, bool)
            or not isinstance(ms, int | float)
            or not 0 <= ms <= 3_600_000
        ):
            raise UsageError(
                Message(
                    "{where}: tool result {n} needs a name, its content as text and its "
                    "time in ms (0 to an hour)",
                    where=where,
                    n=n,
                )
            )
        yield ToolResult(name, content, float(ms))


FORMAT = TraceFormat("agent", _sniff, _read)
