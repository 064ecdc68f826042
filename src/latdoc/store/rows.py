"""How a sample becomes its two rows, and a run its row, and how they come back.

A sample is one narrow ``samples`` row (what reports aggregate: start, TTFT, TPOT,
total, outcome, tokens, the conditions it was sent under) and one
``sample_traces`` row holding its full trace record as JSON, scrubbed of
credentials (:mod:`latdoc.store.redact`). A run is one ``runs`` row; its info is
read back with the counts of its samples (:data:`RUN_COLUMNS`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from latdoc.records import Sample, Step
from latdoc.store._fields import INT64
from latdoc.store.codec import trace_from_record, trace_to_record
from latdoc.store.process import Owner
from latdoc.store.redact import Redactor
from latdoc.store.run import RunInfo, notes_from_data, notes_to_data, parse_utc, utc_text
from latdoc.store.schema import epoch_ns

_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
_SAMPLE_INSERT = (
    "INSERT INTO samples (seq, run_id, idx, step, target_prompt_tokens, concurrency, cold, "
    "ok, error_code, prompt_tokens, ttft_ms, total_ms, loop_lag_ms, started_ns, tpot_ms, "
    "output_tokens, status, attempt, worker) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


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
        if started_ns not in INT64:
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


RUN_COLUMNS = (
    "run_id, started_at, finished_at, status, endpoint, model, scenario, verdict, meta, notes, "
    "kind, pid, host, boot_id, pid_started, "
    "(SELECT count(*) FROM samples s WHERE s.run_id = runs.run_id), "
    "(SELECT count(*) FROM samples s WHERE s.run_id = runs.run_id AND NOT s.ok)"
)
"""What :func:`run_from_row` reads, from ``runs``."""


def insert_run(
    conn: sqlite3.Connection,
    redactor: Redactor,
    info: RunInfo,
    meta: Mapping[str, Any],
    diagnosis: Mapping[str, Any] | None,
) -> None:
    """Insert the row of run ``info``; the caller holds the write transaction."""
    text = redactor.text
    clean = None if diagnosis is None else redactor.value(diagnosis)
    conn.execute(
        "INSERT INTO runs (run_id, started_at, finished_at, status, endpoint, model, "
        "scenario, verdict, meta, diagnosis, notes, kind, pid, host, boot_id, pid_started) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            info.run_id,
            utc_text(info.started_at),
            None if info.finished_at is None else utc_text(info.finished_at),
            info.status,
            text(info.endpoint),
            text(info.model),
            text(info.scenario),
            info.verdict if clean is None else verdict_of(clean),
            json_text(redactor.value(meta, mask_names=True)),
            json_text(clean),
            json_text(redactor.value(notes_to_data(info.notes))),
            info.kind,
            *owner_row(info.owner),
        ),
    )


def owner_row(owner: Owner | None) -> tuple[int | None, str | None, str | None, int | None]:
    """The ``pid, host, boot_id, pid_started`` columns of a run kept by ``owner``."""
    if owner is None:
        return (None, None, None, None)
    return (owner.pid, owner.host, owner.boot_id, owner.started)


def run_from_row(row: tuple[Any, ...]) -> RunInfo:
    """The info of one row of :data:`RUN_COLUMNS`."""
    (run_id, started, finished, status, endpoint, model, scenario, verdict, meta, notes, kind,
     pid, host, boot, pid_started, n, bad) = row  # fmt: skip
    owner = None if pid is None and host is None else Owner(pid, host, boot, pid_started)
    return RunInfo(
        run_id=run_id,
        started_at=parse_utc(started),
        finished_at=None if finished is None else parse_utc(finished),
        status=status,
        endpoint=endpoint,
        model=model,
        scenario=scenario,
        requests=n,
        failed=bad,
        verdict=verdict,
        meta=json.loads(meta),
        notes=() if notes is None else notes_from_data(json.loads(notes)),
        kind=kind,
        owner=owner,
    )


def json_text(value: Any) -> str | None:
    """``value`` as compact JSON, ``None`` as SQL ``NULL``."""
    return None if value is None else _ENCODE(value)


def verdict_of(diagnosis: Mapping[str, Any] | None) -> str | None:
    """The primary verdict of a diagnosis document, as the ``verdict`` column keeps it."""
    verdict = None if diagnosis is None else diagnosis.get("verdict")
    primary = verdict.get("primary") if isinstance(verdict, Mapping) else None
    return primary if isinstance(primary, str) else None
