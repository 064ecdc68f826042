"""Real workloads in: traces of production traffic, read as they are needed.

A trace is read one request at a time (:class:`TraceRequest`), so a file of any size
replays in bounded memory. Each format is one module with a ``FORMAT`` entry
(:class:`TraceFormat`: its name, how it recognises a file by its first line, how it
reads one), listed by :func:`formats`:

- ``mooncake``: JSON Lines of ``timestamp`` (ms), ``input_length``,
  ``output_length`` and ``hash_ids`` (the blocks of shared prefix);
- ``sharegpt``: conversations (``conversations: [{"from": "human", "value": ...},
  ...]``), as a JSON array or JSON Lines; each human turn a request of its session;
- ``agent``: an agent's sessions, JSON Lines of ``session``, ``turn``, ``user`` and the
  ``tool_results`` its tools gave; each turn sent with the session's history and each
  tool result handed back when the model calls a tool;
- ``aiperf``: NVIDIA AIPerf's multi-turn conversations, JSON Lines of ``session_id`` and
  ``turns`` (each its ``text``, ``output_length`` and ``delay``); each turn sent with
  the session's history after the last answer and its delay;
- ``burstgpt``: CSV with ``Timestamp`` (s), ``Request tokens``, ``Response tokens``;
- ``latdoc``: latdoc's own JSON Lines export (``latdoc export``), so a recorded run
  replays elsewhere.

:func:`open_trace` opens a file (gzipped or not, a UTF-8 byte-order mark skipped),
picks the format by ``fmt`` or by sniffing the first line, and yields its requests.
A line that cannot be read is a :class:`~latdoc.errors.UsageError` naming the file and
the line; nothing is skipped silently.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.workload.traces import agent, aiperf, burstgpt, latdoc_export, mooncake, sharegpt
from latdoc.workload.traces._format import Lines, ToolResult, TraceFormat, TraceRequest

__all__ = [
    "ToolResult",
    "TraceFormat",
    "TraceRequest",
    "formats",
    "names",
    "open_trace",
    "read_trace",
]


def formats() -> tuple[TraceFormat, ...]:
    """Every format, in the order sniffing tries them: one module each."""
    return (
        mooncake.FORMAT,
        agent.FORMAT,
        aiperf.FORMAT,
        sharegpt.FORMAT,
        burstgpt.FORMAT,
        latdoc_export.FORMAT,
    )


def names() -> tuple[str, ...]:
    return tuple(f.name for f in formats())


def open_trace(path: Path, fmt: str | None = None) -> Iterator[TraceRequest]:
    """The requests of the trace at ``path``, read as they are asked for."""
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise UsageError(
            Message("cannot read {path}: {strerror}", path=path, strerror=exc.strerror)
        ) from None
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
            raise UsageError(Message("{source}: empty: no requests to replay", source=source))
        chosen = _choose(first[1], source, fmt)
        yield from chosen.read(_again(first, lines), source)


def _choose(first: str, source: str, fmt: str | None) -> TraceFormat:
    if fmt is not None:
        for f in formats():
            if f.name == fmt:
                return f
        raise UsageError(
            Message("--trace-format {fmt}: use one of {known}", fmt=fmt, known=", ".join(names()))
        )
    for f in formats():
        if f.sniff(first):
            return f
    raise UsageError(
        Message(
            "{source}: not a trace latdoc knows (its first line: {start!r}); name "
            "its format with --trace-format ({known})",
            source=source,
            start=first[:60],
            known=", ".join(names()),
        )
    )


def _numbered(text: IO[str], source: str) -> Lines:
    number = 0
    while True:
        number += 1
        try:
            line = text.readline()
        except (UnicodeDecodeError, OSError, EOFError) as exc:
            raise UsageError(
                Message(
                    "{source}:{number}: cannot be read: {exc}",
                    source=source,
                    number=number,
                    exc=str(exc),
                )
            ) from None
        if not line:
            return
        if line.strip():
            yield number, line


def _again(first: tuple[int, str], rest: Lines) -> Lines:
    yield first
    yield from rest
