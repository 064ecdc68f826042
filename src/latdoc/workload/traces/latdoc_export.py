"""latdoc's own JSON Lines export (``latdoc export --format jsonl``): its run line, then
a line per request; each request replays at its recorded start, with the prompt
length the endpoint counted (or the one asked for) and the output it gave."""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.store.requests import SCHEMA
from latdoc.workload.traces._format import (
    Lines,
    TraceFormat,
    TraceRequest,
    count,
    json_lines,
    ordered_times,
)


def _sniff(first: str) -> bool:
    return f'"schema":"{SCHEMA}"' in first.replace(" ", "")


def _read(lines: Lines, source: str) -> Iterator[TraceRequest]:
    return ordered_times(_requests(lines, source), source)


def _requests(lines: Lines, source: str) -> Iterator[TraceRequest]:
    for number, where, obj in json_lines(lines, source):
        if obj.get("schema") != SCHEMA:
            raise UsageError(
                Message(
                    "{where}: not a line of a latdoc export ({schema})", where=where, schema=SCHEMA
                )
            )
        if obj.get("kind") != "request" or not obj.get("ok", True):
            continue
        tokens = obj.get("prompt_tokens") or obj.get("target_prompt_tokens")
        if tokens is None:
            raise UsageError(
                Message("{where}: the request has no prompt length to replay", where=where)
            )
        started = obj.get("started_ns")
        yield TraceRequest(
            number,
            None if started is None else count(started, where, "started_ns") / 1e9,
            count(tokens, where, "prompt_tokens", least=1),
            max(1, count(obj.get("output_tokens") or 1, where, "output_tokens")),
        )


FORMAT = TraceFormat("latdoc", _sniff, _read)
