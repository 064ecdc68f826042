"""Mooncake's trace: JSON Lines of ``{"timestamp": ms, "input_length": N,
"output_length": M, "hash_ids": [ids]}``. Each id names a block of the prompt
(:data:`BLOCK_TOKENS` tokens); requests whose ids start alike share that prefix, so a
replay sends prompts that really share it and a prefix cache can hit."""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.workload.traces._format import (
    Lines,
    TraceFormat,
    TraceRequest,
    count,
    json_lines,
    object_with,
    ordered_times,
)

BLOCK_TOKENS = 512
"""Tokens a hash id stands for in Mooncake's traces."""


def _sniff(first: str) -> bool:
    return object_with(first, "input_length", "output_length")


def _read(lines: Lines, source: str) -> Iterator[TraceRequest]:
    return ordered_times(_requests(lines, source), source)


def _requests(lines: Lines, source: str) -> Iterator[TraceRequest]:
    for number, where, obj in json_lines(lines, source):
        for key in ("input_length", "output_length"):
            if key not in obj:
                raise UsageError(Message("{where}: missing {key!r}", where=where, key=key))
        ids = obj.get("hash_ids", [])
        if not isinstance(ids, list):
            raise UsageError(Message("{where}: hash_ids must be a list of numbers", where=where))
        blocks = tuple(count(i, where, "a hash id") for i in ids)
        stamp = obj.get("timestamp")
        at = None if stamp is None else count(stamp, where, "timestamp") / 1000
        yield TraceRequest(
            number,
            at,
            count(obj["input_length"], where, "input_length", least=1),
            count(obj["output_length"], where, "output_length", least=1),
            blocks,
        )


FORMAT = TraceFormat("mooncake", _sniff, _read)
