"""BurstGPT's trace: CSV with a header naming ``Timestamp`` (seconds), ``Request tokens``
and ``Response tokens`` (its other columns, ``Model`` and ``Log Type``, are read past).
A request with 0 response tokens (a failure in the original log) is replayed with
one."""

from __future__ import annotations

import csv
from collections.abc import Iterator

from latdoc.errors import UsageError
from latdoc.i18n import Message
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
            raise UsageError(Message("{where}: {exc}", where=where, exc=str(exc))) from None
        if header is None:
            header = [h.strip() for h in row]
            missing = [name for name in _NEEDED if name not in header]
            if missing:
                raise UsageError(
                    Message(
                        "{where}: the header lacks {missing}",
                        where=where,
                        missing=", ".join(missing),
                    )
                )
            at, ask, answer = (header.index(name) for name in _NEEDED)
            continue
        if len(row) != len(header):
            raise UsageError(
                Message(
                    "{where}: {n_row} fields where the header has {n_header}",
                    where=where,
                    n_row=len(row),
                    n_header=len(header),
                )
            )
        try:
            stamp = float(row[at])
        except ValueError:
            raise UsageError(
                Message(
                    "{where}: Timestamp must be a number, not {stamp!r}", where=where, stamp=row[at]
                )
            ) from None
        if stamp < 0:
            raise UsageError(
                Message(
                    "{where}: Timestamp must not be negative ({stamp})", where=where, stamp=stamp
                )
            )
        yield TraceRequest(
            number,
            stamp,
            count(row[ask], where, "Request tokens", least=1),
            max(1, count(row[answer], where, "Response tokens")),
        )


FORMAT = TraceFormat("burstgpt", _sniff, _read)
