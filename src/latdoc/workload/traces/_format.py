"""What every trace format is built from: a request of a trace (:class:`TraceRequest`),
a format (:class:`TraceFormat`), and the readings the formats share (a line's JSON
object, a whole number, times in order), below the package that lists the formats."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from latdoc.errors import UsageError, nesting_checked
from latdoc.i18n import Message


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool gave back in a recorded agent turn, and how long it took."""

    name: str
    content: str
    ms: float = 0.0


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace."""

    line: int
    """Where it is in the file (a line, or a conversation's place in a JSON array)."""
    at_s: float | None
    """When it was sent, seconds from the trace's first request; ``None`` when the
    trace has no times (replayed as fast as the closed loop allows)."""
    input_tokens: int
    output_tokens: int
    blocks: tuple[int, ...] = ()
    """Mooncake's ``hash_ids``: the prompt's blocks, alike where the ids are alike."""
    session: str | None = None
    """The conversation it belongs to (its history is carried from turn to turn)."""
    turn: int = 0
    """Its turn in the session, from 0."""
    text: str | None = None
    """The user's own words for this turn, where the trace has them."""
    tool_results: tuple[ToolResult, ...] = ()
    """An agent's turn: the results its tools gave, in the order the model called them,
    each handed back to the model as the tool's answer (after its time) until the model
    answers in text."""
    delay_ms: float = 0.0
    """How long the user waits after the last turn's answer before sending this one (a
    conversation's think time)."""
    system: str | None = None
    """The conversation's system prompt, sent before its turns."""


Lines = Iterator[tuple[int, str]]
"""A file's lines, each with its number from 1."""


@dataclass(frozen=True)
class TraceFormat:
    name: str
    sniff: Callable[[str], bool]
    """Whether a file whose first non-empty line is this is in the format."""
    read: Callable[[Lines, str], Iterator[TraceRequest]]
    """The requests of a file's lines; the ``str`` names the file in errors."""


def object_with(first: str, *keys: str) -> bool:
    """Whether a file's first line is a JSON object holding every one of ``keys``: how a
    JSON Lines format knows its files."""
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and all(key in obj for key in keys)


def json_lines(lines: Lines, source: str) -> Iterator[tuple[int, str, dict[str, object]]]:
    """Each line's number, the place to name in an error (``file:line``), and its JSON
    object."""
    for number, line in lines:
        where = f"{source}:{number}"
        try:
            with nesting_checked(where):
                obj = json.loads(line)
        except ValueError as exc:
            raise UsageError(
                Message("{where}: invalid JSON ({exc})", where=where, exc=str(exc))
            ) from None
        if not isinstance(obj, dict):
            raise UsageError(Message("{where}: expected a JSON object", where=where))
        yield number, where, obj


def count(value: object, where: str, name: str, *, least: int = 0) -> int:
    """A whole number of at least ``least`` from a trace's field, or a clear error."""
    not_whole = Message(
        "{where}: {name} must be a whole number, not {value!r}", where=where, name=name, value=value
    )
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UsageError(not_whole)
    try:
        number = float(value)
    except ValueError:
        raise UsageError(not_whole) from None
    if number != int(number) or number < least:
        raise UsageError(
            Message(
                "{where}: {name} must be a whole number ≥ {least}, not {value!r}",
                where=where,
                name=name,
                least=least,
                value=value,
            )
        )
    return int(number)


def ordered_times(requests: Iterator[TraceRequest], source: str) -> Iterator[TraceRequest]:
    """Times made relative to the first request; a time before the one before it (or
    before the first) is an error naming the line."""
    first: float | None = None
    last = 0.0
    for r in requests:
        if r.at_s is None:
            yield r
            continue
        if first is None:
            first = r.at_s
        at = r.at_s - first
        if at < last:
            raise UsageError(
                Message(
                    "{source}:{line}: its time is before the request before it ({at:.3f} s "
                    "after the first, the one before at {last:.3f} s): a trace's requests "
                    "are in the order they were sent",
                    source=source,
                    line=r.line,
                    at=at,
                    last=last,
                )
            )
        last = at
        yield TraceRequest(r.line, at, r.input_tokens, r.output_tokens, r.blocks, r.session,
                           r.turn, r.text, r.tool_results)  # fmt: skip
