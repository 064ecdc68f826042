"""Real workloads in: traces of production traffic, read as they are needed.

A trace is read one request at a time (:class:`TraceRequest`), so a file of any size
replays in bounded memory. Each format is one module with a ``FORMAT`` entry
(:class:`TraceFormat`: its name, how it recognises a file by its first line, how it
reads one), listed by :func:`formats`:

- ``mooncake``: JSON Lines of ``timestamp`` (ms), ``input_length``,
  ``output_length`` and ``hash_ids`` (the blocks of shared prefix);
- ``sharegpt``: conversations (``conversations: [{"from": "human", "value": ...},
  ...]``), as a JSON array or JSON Lines; each human turn a request of its session;
- ``burstgpt``: CSV with ``Timestamp`` (s), ``Request tokens``, ``Response tokens``;
- ``latdoc``: latdoc's own JSON Lines export (``latdoc export``), so a recorded run
  replays elsewhere.

:func:`open_trace` opens a file (gzipped or not, a UTF-8 byte-order mark skipped),
picks the format by ``fmt`` or by sniffing the first line, and yields its requests.
A line that cannot be read is a :class:`~latdoc.errors.UsageError` naming the file and
the line; nothing is skipped silently.
"""

from __future__ import annotations

import functools
import gzip
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from latdoc.errors import UsageError, nesting_checked

__all__ = ["TraceFormat", "TraceRequest", "formats", "names", "open_trace", "read_trace"]


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


Lines = Iterator[tuple[int, str]]
"""A file's lines, each with its number from 1."""


@dataclass(frozen=True)
class TraceFormat:
    name: str
    sniff: Callable[[str], bool]
    """Whether a file whose first non-empty line is this is in the format."""
    read: Callable[[Lines, str], Iterator[TraceRequest]]
    """The requests of a file's lines; the ``str`` names the file in errors."""


@functools.cache
def formats() -> tuple[TraceFormat, ...]:
    """Every format, in the order sniffing tries them: one module each."""
    from latdoc.workload.traces import burstgpt, latdoc_export, mooncake, sharegpt

    return (mooncake.FORMAT, sharegpt.FORMAT, burstgpt.FORMAT, latdoc_export.FORMAT)


def names() -> tuple[str, ...]:
    return tuple(f.name for f in formats())


def open_trace(path: Path, fmt: str | None = None) -> Iterator[TraceRequest]:
    """The requests of the trace at ``path``, read as they are asked for."""
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    return read_trace(raw, str(path), fmt)


def read_trace(raw: IO[bytes], source: str, fmt: str | None = None) -> Iterator[TraceRequest]:
    """The requests of an open binary file (closed when they are all read)."""
    with raw:
        head = raw.read(2)
        stream: IO[bytes] = raw
        if head == b"\x1f\x8b":
            raw.seek(0)
            stream = gzip.GzipFile(fileobj=raw)  # type: ignore[assignment]
        else:
            raw.seek(0)
        text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
        lines = _numbered(text, source)
        first = next(lines, None)
        if first is None:
            raise UsageError(f"{source}: empty: no requests to replay")
        chosen = _choose(first[1], source, fmt)
        yield from chosen.read(_again(first, lines), source)


def _choose(first: str, source: str, fmt: str | None) -> TraceFormat:
    if fmt is not None:
        for f in formats():
            if f.name == fmt:
                return f
        raise UsageError(f"--trace-format {fmt}: use one of {', '.join(names())}")
    for f in formats():
        if f.sniff(first):
            return f
    raise UsageError(
        f"{source}: not a trace latdoc knows (its first line: {first[:60]!r}); "
        f"name its format with --trace-format ({', '.join(names())})"
    )


def _numbered(text: IO[str], source: str) -> Lines:
    number = 0
    while True:
        number += 1
        try:
            line = text.readline()
        except (UnicodeDecodeError, OSError, EOFError) as exc:
            raise UsageError(f"{source}:{number}: cannot be read: {exc}") from None
        if not line:
            return
        if line.strip():
            yield number, line


def _again(first: tuple[int, str], rest: Lines) -> Lines:
    yield first
    yield from rest


def json_lines(lines: Lines, source: str) -> Iterator[tuple[int, str, dict[str, object]]]:
    """Each line's number, the place to name in an error (``file:line``), and its JSON
    object."""
    import json

    for number, line in lines:
        where = f"{source}:{number}"
        try:
            with nesting_checked(where):
                obj = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{where}: invalid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise UsageError(f"{where}: expected a JSON object")
        yield number, where, obj


def count(value: object, where: str, name: str, *, least: int = 0) -> int:
    """A whole number of at least ``least`` from a trace's field, or a clear error."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UsageError(f"{where}: {name} must be a whole number, not {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"{where}: {name} must be a whole number, not {value!r}") from None
    if number != int(number) or number < least:
        raise UsageError(f"{where}: {name} must be a whole number ≥ {least}, not {value!r}")
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
                f"{source}:{r.line}: its time is before the request before it "
                f"({at:.3f} s after the first, the one before at {last:.3f} s): "
                "a trace's requests are in the order they were sent"
            )
        last = at
        yield TraceRequest(r.line, at, r.input_tokens, r.output_tokens, r.blocks, r.session,
                           r.turn, r.text)  # fmt: skip
