"""Per-bucket summaries of stored samples, computed from the narrow ``samples`` columns.

A report over a million requests reads four numbers per request (the bucket of
its wall-clock start, whether it succeeded, its TTFT and TPOT) as numpy arrays
and never decodes a trace record. Percentiles are latdoc's one definition
(:func:`~latdoc.model.percentile.quantiles`: linear interpolation between closest ranks),
the same as :class:`~latdoc.analysis.stats.Distribution`, over the requests that
succeeded: a failed request's TTFT or TPOT is not the endpoint's latency, and every
other latdoc summary leaves it out too.
:func:`bucket_ttfts` reads the TTFTs themselves, per bucket, for a test that
needs the values (the watch's peak against off-peak).

Fetching the columns into numpy is faster than ranking in SQL with a window query
(``row_number() OVER (PARTITION BY bucket ORDER BY ttft_ms)``), which sorts every
row inside SQLite: at a million samples 1.35 s against 1.59 s, for 135 MB of peak
RSS against 71 MB, both well inside a report's 5 s and 500 MB
(``bench/store_scale.py`` measures both), and the values' percentiles are read as
every other latdoc summary reads them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
import numpy.typing as npt

from latdoc.model.percentile import quantiles
from latdoc.records import Step

_NS_PER_S = 1_000_000_000
_FETCH_ROWS = 65_536


@dataclass(frozen=True, slots=True)
class BucketStats:
    """The requests that started in one time bucket, summarised."""

    bucket: int
    """The bucket's number: with a cycle, its place in the cycle (an hour of the day
    is 0 to 23); without, the number of whole buckets since the Unix epoch."""
    start: timedelta
    """Where the bucket starts: into the cycle, or since the Unix epoch."""
    requests: int
    errors: int
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    tpot_p50_ms: float | None
    error_codes: Mapping[str, int] = field(default_factory=dict)
    """How many requests failed with each error code."""


def _ns(span: timedelta) -> int:
    return (span.days * 86_400 + span.seconds) * _NS_PER_S + span.microseconds * 1000


def _whole_ns(span: timedelta, name: str) -> int:
    ns = _ns(span)
    if ns <= 0:
        raise ValueError(f"{name} must be longer than zero, got {span}")
    return ns


def aggregate_samples(
    conn: sqlite3.Connection,
    run_ids: Sequence[str],
    *,
    bucket: timedelta,
    cycle: timedelta | None,
    offset: timedelta,
    steps: Sequence[Step] | None,
) -> tuple[BucketStats, ...]:
    """The samples of ``run_ids`` summarised per bucket, in bucket order."""
    bucket_ns, key, where, params = _chosen(run_ids, bucket, cycle, offset, steps)
    columns = _fetch(
        conn, f"SELECT {key}, ok, ttft_ms, tpot_ms FROM samples WHERE {where}", params, width=4
    )
    codes = _error_codes(conn, key, where, params)
    return _summarise(columns, codes, bucket_ns)


def bucket_ttfts(
    conn: sqlite3.Connection,
    run_ids: Sequence[str],
    *,
    bucket: timedelta,
    cycle: timedelta | None,
    offset: timedelta,
    steps: Sequence[Step] | None,
    cold: bool | None,
    target_prompt_tokens: int | None,
) -> dict[int, npt.NDArray[np.float64]]:
    """The TTFTs of the successful samples of ``run_ids`` per bucket (numbered as
    :func:`aggregate_samples` numbers them), in sample order; only
    cold (or warm) samples with ``cold``, only those of that prompt length with
    ``target_prompt_tokens``."""
    _, key, where, params = _chosen(run_ids, bucket, cycle, offset, steps)
    where += " AND ok AND ttft_ms IS NOT NULL"
    if cold is not None:
        where += " AND cold = ?"
        params.append(int(cold))
    if target_prompt_tokens is not None:
        where += " AND target_prompt_tokens = ?"
        params.append(target_prompt_tokens)
    columns = _fetch(
        conn,
        f"SELECT {key}, ttft_ms FROM samples WHERE {where} ORDER BY idx, seq",
        params,
        width=2,
    )
    order, numbers, starts = _by_bucket(columns)
    groups = np.split(columns[order, 1], starts[1:])
    return {int(n): g for n, g in zip(numbers, groups, strict=True)}


def _chosen(
    run_ids: Sequence[str],
    bucket: timedelta,
    cycle: timedelta | None,
    offset: timedelta,
    steps: Sequence[Step] | None,
) -> tuple[int, str, str, list[object]]:
    """The bucket's width in ns, the SQL expression numbering a sample's bucket, the
    condition choosing the samples, and the parameters of the two, in that order."""
    bucket_ns = _whole_ns(bucket, "bucket")
    key = "(started_ns + ?) / ?"
    params: list[object] = [_ns(offset), bucket_ns]
    if cycle is not None:
        cycle_ns = _whole_ns(cycle, "cycle")
        if cycle_ns % bucket_ns:
            raise ValueError(f"the cycle ({cycle}) is not a whole number of buckets ({bucket})")
        key = f"({key}) % ?"
        params.append(cycle_ns // bucket_ns)
    where = f"run_id IN ({', '.join('?' * len(run_ids))}) AND started_ns IS NOT NULL"
    params.extend(run_ids)
    if steps is not None:
        where += f" AND step IN ({', '.join('?' * len(steps))})"
        params.extend(str(s) for s in steps)
    return bucket_ns, key, where, params


def _by_bucket(
    columns: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """The rows in bucket order (sample order kept within a bucket), the bucket numbers,
    and where each bucket starts in that order."""
    keys = columns[:, 0].astype(np.int64)
    order = np.argsort(keys, kind="stable")
    numbers, starts = np.unique(keys[order], return_index=True)
    return order, numbers, starts


def _fetch(
    conn: sqlite3.Connection, query: str, params: Sequence[object], *, width: int
) -> npt.NDArray[np.float64]:
    cursor = conn.execute(query, params)
    parts: list[npt.NDArray[np.float64]] = []
    while rows := cursor.fetchmany(_FETCH_ROWS):
        # None becomes NaN: a TTFT or TPOT not measured.
        parts.append(np.array(rows, dtype=np.float64))
    if not parts:
        return np.empty((0, width), dtype=np.float64)
    return np.concatenate(parts)


def _error_codes(
    conn: sqlite3.Connection, key: str, where: str, params: Sequence[object]
) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    rows = conn.execute(
        f"SELECT {key} AS b, coalesce(error_code, ''), count(*) FROM samples "
        f"WHERE {where} AND NOT ok GROUP BY 1, 2",
        params,
    )
    for number, code, count in rows:
        out.setdefault(int(number), {})[str(code)] = int(count)
    return out


def _summarise(
    columns: npt.NDArray[np.float64], codes: Mapping[int, Mapping[str, int]], bucket_ns: int
) -> tuple[BucketStats, ...]:
    if columns.shape[0] == 0:
        return ()
    order, numbers, starts = _by_bucket(columns)
    ends = [*starts[1:], order.size]
    ok, ttft, tpot = columns[order, 1], columns[order, 2], columns[order, 3]
    ttft[ok == 0] = np.nan
    tpot[ok == 0] = np.nan
    out: list[BucketStats] = []
    for number, start, end in zip(numbers, starts, ends, strict=True):
        window = slice(int(start), int(end))
        ttft_p50, ttft_p95 = _percentiles(ttft[window], (0.50, 0.95))
        (tpot_p50,) = _percentiles(tpot[window], (0.50,))
        out.append(
            BucketStats(
                bucket=int(number),
                start=timedelta(microseconds=int(number) * bucket_ns // 1000),
                requests=int(end - start),
                errors=int(np.count_nonzero(ok[window] == 0)),
                ttft_p50_ms=ttft_p50,
                ttft_p95_ms=ttft_p95,
                tpot_p50_ms=tpot_p50,
                error_codes=dict(codes.get(int(number), {})),
            )
        )
    return tuple(out)


def _percentiles(
    values: npt.NDArray[np.float64], qs: tuple[float, ...]
) -> tuple[float | None, ...]:
    measured = values[~np.isnan(values)]
    if measured.size == 0:
        return tuple(None for _ in qs)
    return tuple(float(v) for v in quantiles(measured, qs))
