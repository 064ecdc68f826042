"""BurstGPT's trace: CSV with a header naming ``Timestamp`` (seconds), ``Request tokens``
and ``Response tokens`` (its other columns, ``Model`` and ``Log Type``, are read past).
A request with 0 response tokens (a failure in the original log) is replayed with
one."""

from __future__ import annotations

import csv
from collections.abc import Iterator

from latdoc.errors import UsageError
from latdoc.workload.traces._format import Lines, TraceFormat, TraceRequest, count, ordered_times

_NEEDED = ("Timestamp", "Request tokens", "Response tokens")


def _sniff(first: str) -> bool:
    return all(name in first for name in _NEEDED)


def _read(lines: Lines, source: str) -> Iterator[TraceRequest]:
    return ordered_times(_requests(lines, source), source)


def _requests(lines: Lines, source: str) -> Iterator[TraceRequest]:
    header: list[str] | None = None
    for number, line in lines:
        where = f"{source}:{number}"
        try:
            row = next(csv.reader([line]))
        except csv.Error as exc:
            raise UsageError(f"{where}: {exc}") from None
        if header is None:
            header = [h.strip() for h in row]
            missing = [name for name in _NEEDED if name not in header]
            if missing:
                raise UsageError(f"{where}: the header lacks {', '.join(missing)}")
            at, ask, answer = (header.index(name) for name in _NEEDED)
            continue
        if len(row) != len(header):
            raise UsageError(f"{where}: {len(row)} fields where the header has {len(header)}")
        try:
            stamp = float(row[at])
        except ValueError:
            raise UsageError(f"{where}: Timestamp must be a number, not {row[at]!r}") from None
        if stamp < 0:
            raise UsageError(f"{where}: Timestamp must not be negative ({stamp})")
        yield TraceRequest(
            number,
            stamp,
            count(row[ask], where, "Request tokens", least=1),
            max(1, count(row[answer], where, "Response tokens")),
        )


FORMAT = TraceFormat("burstgpt", _sniff, _read)
