"""How a sample becomes its two rows, and comes back from them.

A sample is one narrow ``samples`` row (what reports aggregate: start, TTFT, TPOT,
total, outcome, tokens, the conditions it was sent under) and one
``sample_traces`` row holding its full trace record as JSON, scrubbed of
credentials (:mod:`latdoc.store.redact`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from latdoc.records import Sample, Step
from latdoc.store.codec import trace_from_record, trace_to_record
from latdoc.store.redact import Redactor
from latdoc.store.schema import epoch_ns

_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
_SAMPLE_INSERT = (
    "INSERT INTO samples (seq, run_id, idx, step, target_prompt_tokens, concurrency, cold, "
    "ok, error_code, prompt_tokens, ttft_ms, total_ms, loop_lag_ms, started_ns, tpot_ms, "
    "output_tokens, status, attempt, worker) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INT64 = range(-(2**63), 2**63)


def insert_samples(
    conn: sqlite3.Connection, redactor: Redactor, run_id: str, samples: Sequence[Sample]
) -> None:
    """Insert ``samples`` of ``run_id``; the caller holds the write transaction."""
    # Sequence numbers are given here, under the write lock of the transaction,
    # so that both tables take their rows in one executemany each.
    last = conn.execute("SELECT coalesce(max(seq), 0) FROM samples").fetchone()[0]
    summaries: list[tuple[Any, ...]] = []
    traces: list[tuple[int, str]] = []
    for seq, sample in enumerate(samples, start=last + 1):
        summaries.append(_summary_row(redactor, seq, run_id, sample))
        traces.append((seq, _ENCODE(redactor.record(trace_to_record(sample.trace)))))
    conn.executemany(_SAMPLE_INSERT, summaries)
    conn.executemany("INSERT INTO sample_traces (seq, trace) VALUES (?, ?)", traces)


def _summary_row(redactor: Redactor, seq: int, run_id: str, sample: Sample) -> tuple[Any, ...]:
    trace = sample.trace
    started_ns = trace.started_ns
    if started_ns is None:
        started_ns = epoch_ns(trace.started_at)
        # SQLite integers are 64-bit: past 2262 the start stays in the trace only.
        if started_ns not in _INT64:
            started_ns = None
    return (
        seq,
        run_id,
        sample.index,
        redactor.text(sample.step),
        sample.target_prompt_tokens,
        sample.concurrency,
        sample.cold,
        trace.error is None,
        None if trace.error is None else trace.error.code,
        trace.prompt_tokens,
        trace.ttft_ms,
        trace.total_ms,
        sample.loop_lag_ms,
        started_ns,
        trace.tpot_ms,
        trace.output_tokens,
        trace.status,
        trace.attempt,
        sample.worker,
    )


SAMPLE_COLUMNS = "idx, step, target_prompt_tokens, concurrency, cold, loop_lag_ms, worker, trace"
"""What :func:`sample_from_row` reads, from ``samples JOIN sample_traces USING (seq)``."""


def sample_from_row(row: tuple[Any, ...]) -> Sample:
    """The sample of one row of :data:`SAMPLE_COLUMNS`."""
    idx, step, target, concurrency, cold, loop_lag, worker, trace = row
    return Sample(
        step=Step(step),
        trace=trace_from_record(json.loads(trace)),
        target_prompt_tokens=target,
        concurrency=concurrency,
        cold=bool(cold),
        index=idx,
        loop_lag_ms=loop_lag,
        worker=worker,
    )
