"""Runs and their traces in SQLite: :class:`Store`.

One file (see :func:`default_path`) holds every diagnosis run: a ``runs`` row
per run, a ``samples`` row per measured request with the full trace record as
JSON beside a few indexed columns for queries. Each sample is committed as it
is added, so a run that is interrupted keeps every trace it finished. The
journal is WAL, foreign keys are enforced, and the schema is versioned
(:mod:`latdoc.store.schema`). Nothing that looks like a credential is written
(:mod:`latdoc.store.redact`).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from secrets import token_hex
from types import TracebackType
from typing import Any, Self

from latdoc.errors import UsageError
from latdoc.records import Sample, Step, StepNote
from latdoc.store.codec import trace_from_record, trace_to_record
from latdoc.store.exchange import dump_run, load_document
from latdoc.store.redact import Redactor
from latdoc.store.run import (
    RUN_KINDS,
    RUN_STATUSES,
    RunInfo,
    notes_from_data,
    notes_to_data,
    parse_utc,
    utc_text,
)
from latdoc.store.schema import SCHEMA_VERSION, check_version, migrate

__all__ = ["SCHEMA_VERSION", "RunInfo", "Store", "default_path"]

BUSY_TIMEOUT_MS = 5000
_MEMORY = ":memory:"
_RUN_COLUMNS = (
    "run_id, started_at, finished_at, status, endpoint, model, scenario, verdict, meta, notes, "
    "kind, "
    "(SELECT count(*) FROM samples s WHERE s.run_id = runs.run_id), "
    "(SELECT count(*) FROM samples s WHERE s.run_id = runs.run_id AND NOT s.ok)"
)


def default_path() -> Path:
    """``$LATDOC_DB``, else ``$XDG_DATA_HOME/latdoc/latdoc.db``, else
    ``~/.local/share/latdoc/latdoc.db``; its directory is created."""
    override = os.environ.get("LATDOC_DB")
    if override:
        path = Path(override).expanduser()
    else:
        data_home = os.environ.get("XDG_DATA_HOME", "")
        base = Path(data_home) if os.path.isabs(data_home) else Path.home() / ".local" / "share"
        path = base / "latdoc" / "latdoc.db"
    if str(path) != _MEMORY:
        path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Store:
    """A latdoc store on one SQLite connection; use it as a context manager.

    ``path`` defaults to :func:`default_path`; ``":memory:"`` keeps nothing.
    ``secrets`` are exact strings (the API key in use) masked wherever they
    would be written; ``clock`` gives run start and finish times.
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        secrets: Iterable[str] = (),
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.path = str(default_path() if path is None else path)
        self._redactor = Redactor(secrets)
        self._clock = clock
        self._conn = _open(self.path)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------

    def new_run(
        self,
        *,
        endpoint: str,
        model: str,
        scenario: str,
        meta: Mapping[str, Any],
        kind: str = "diagnose",
    ) -> str:
        """Record the start of a run; return its id, e.g. ``20261129-201502-a1b2c3``."""
        if kind not in RUN_KINDS:
            raise ValueError(f"kind {kind!r}: use one of {sorted(RUN_KINDS)}")
        started = self._clock()
        with self._transaction():
            run_id = f"{started.astimezone(UTC):%Y%m%d-%H%M%S}-{token_hex(3)}"
            while self._exists(run_id):
                run_id = f"{run_id[:15]}-{token_hex(3)}"
            info = RunInfo(
                run_id, started, None, "running", endpoint, model, scenario, 0, 0, None, kind=kind
            )
            self._insert_run(info, meta, None)
        return run_id

    def add_sample(self, run_id: str, sample: Sample) -> None:
        """Store one sample of ``run_id`` and commit it at once."""
        with self._transaction():
            if not self._exists(run_id):
                raise self._missing(run_id)
            self._insert_sample(run_id, sample)

    def add_samples(self, run_id: str, samples: Sequence[Sample]) -> None:
        """Store several samples of ``run_id`` in one commit (one disk sync for all)."""
        if not samples:
            return
        with self._transaction():
            if not self._exists(run_id):
                raise self._missing(run_id)
            for sample in samples:
                self._insert_sample(run_id, sample)

    def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        diagnosis: Mapping[str, Any] | None,
        notes: Sequence[StepNote] = (),
    ) -> None:
        """Close a run as ``done``, ``interrupted`` or ``failed``, with its notes and its
        diagnosis document if any."""
        if status not in RUN_STATUSES - {"running"}:
            raise ValueError(f"status {status!r}: use done, interrupted or failed")
        clean = None if diagnosis is None else self._redactor.value(diagnosis)
        kept = _json(self._redactor.value(notes_to_data(notes)))
        with self._transaction():
            updated = self._conn.execute(
                "UPDATE runs SET finished_at = ?, status = ?, verdict = ?, diagnosis = ?, "
                "notes = ? WHERE run_id = ?",
                (utc_text(self._clock()), status, _verdict(clean), _json(clean), kept, run_id),
            ).rowcount
            if updated == 0:
                raise self._missing(run_id)

    def reopen_run(self, run_id: str) -> None:
        """Mark a finished run ``running`` again, to append samples (a resumed watch)."""
        with self._transaction():
            updated = self._conn.execute(
                "UPDATE runs SET finished_at = NULL, status = 'running' WHERE run_id = ?",
                (run_id,),
            ).rowcount
            if updated == 0:
                raise self._missing(run_id)

    def import_json(self, text: str) -> str:
        """Add the run in an export document (see :mod:`latdoc.store.exchange`); return its id."""
        document = load_document(text)
        run_id = document.run.run_id
        with self._transaction():
            if self._exists(run_id):
                raise UsageError(f"run {run_id} is already in {self.path}")
            self._insert_run(document.run, document.run.meta, document.diagnosis)
            for sample in document.samples:
                self._insert_sample(run_id, sample)
        return run_id

    # -- reading ---------------------------------------------------------------

    def list_runs(self, limit: int = 50) -> list[RunInfo]:
        """Up to ``limit`` runs, newest first."""
        rows = self._conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?",
            (limit,),
        )
        return [_run_info(row) for row in rows]

    def find_runs(self, kind: str, name: str | None = None) -> list[RunInfo]:
        """Runs of ``kind`` (with ``meta["name"] == name`` if given), newest first."""
        query = f"SELECT {_RUN_COLUMNS} FROM runs WHERE kind = ?"
        params: tuple[str, ...] = (kind,)
        if name is not None:
            query += " AND json_extract(meta, '$.name') = ?"
            params = (kind, name)
        rows = self._conn.execute(query + " ORDER BY started_at DESC, run_id DESC", params)
        return [_run_info(row) for row in rows]

    def spent(self, run_id: str) -> tuple[int, int, int]:
        """What a run has sent: requests, prompt + output tokens as counted, next sample index."""
        requests, prompt, output, last = self._conn.execute(
            "SELECT count(*), coalesce(sum(prompt_tokens), 0), "
            "coalesce(sum(json_extract(trace, '$.output_tokens')), 0), max(idx) "
            "FROM samples WHERE run_id = ?",
            (self._resolve(run_id),),
        ).fetchone()
        return requests, prompt + output, 0 if last is None else last + 1

    def run_info(self, run_id: str) -> RunInfo:
        """A run's info by its id or a unique prefix of it, without its samples."""
        full_id = self._resolve(run_id)
        row = self._conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (full_id,)
        ).fetchone()
        return _run_info(row)

    def load_run(self, run_id: str) -> tuple[RunInfo, list[Sample], Mapping[str, Any] | None]:
        """A run by its id or a unique prefix of it: its info, samples in order, diagnosis."""
        full_id = self._resolve(run_id)
        row = self._conn.execute(
            f"SELECT {_RUN_COLUMNS}, diagnosis FROM runs WHERE run_id = ?", (full_id,)
        ).fetchone()
        samples = self._conn.execute(
            "SELECT idx, step, target_prompt_tokens, concurrency, cold, loop_lag_ms, trace "
            "FROM samples WHERE run_id = ? ORDER BY idx, seq",
            (full_id,),
        )
        diagnosis = row[-1]
        return (
            _run_info(row[:-1]),
            [_sample(r) for r in samples],
            None if diagnosis is None else json.loads(diagnosis),
        )

    def export_json(self, run_id: str) -> str:
        """The run as one self-describing JSON document (``{"format": "latdoc-run", ...}``)."""
        info, samples, diagnosis = self.load_run(run_id)
        return dump_run(info, samples, diagnosis)

    # -- internals -------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _insert_run(
        self, info: RunInfo, meta: Mapping[str, Any], diagnosis: Mapping[str, Any] | None
    ) -> None:
        text = self._redactor.text
        clean = None if diagnosis is None else self._redactor.value(diagnosis)
        self._conn.execute(
            "INSERT INTO runs (run_id, started_at, finished_at, status, endpoint, model, "
            "scenario, verdict, meta, diagnosis, notes, kind) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                info.run_id,
                utc_text(info.started_at),
                None if info.finished_at is None else utc_text(info.finished_at),
                info.status,
                text(info.endpoint),
                text(info.model),
                text(info.scenario),
                info.verdict if clean is None else _verdict(clean),
                _json(self._redactor.value(meta, mask_names=True)),
                _json(clean),
                _json(self._redactor.value(notes_to_data(info.notes))),
                info.kind,
            ),
        )

    def _insert_sample(self, run_id: str, sample: Sample) -> None:
        trace = sample.trace
        record = self._redactor.value(trace_to_record(trace))
        self._conn.execute(
            "INSERT INTO samples (run_id, idx, step, target_prompt_tokens, concurrency, cold, "
            "ok, error_code, prompt_tokens, ttft_ms, total_ms, loop_lag_ms, trace) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                sample.index,
                self._redactor.text(sample.step),
                sample.target_prompt_tokens,
                sample.concurrency,
                sample.cold,
                trace.error is None,
                None if trace.error is None else trace.error.code,
                trace.prompt_tokens,
                trace.ttft_ms,
                trace.total_ms,
                sample.loop_lag_ms,
                _json(record),
            ),
        )

    def _exists(self, run_id: str) -> bool:
        row = self._conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return row is not None

    def _resolve(self, prefix: str) -> str:
        if prefix and self._exists(prefix):
            return prefix
        matches: list[str] = [
            row[0]
            for row in self._conn.execute(
                "SELECT run_id FROM runs WHERE substr(run_id, 1, ?) = ? ORDER BY run_id LIMIT 6",
                (len(prefix), prefix),
            )
        ]
        if not prefix or not matches:
            raise self._missing(prefix)
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
            raise UsageError(f"run id {prefix!r} is ambiguous ({shown}); give more of it")
        return matches[0]

    def _missing(self, run_id: str) -> UsageError:
        return UsageError(f"no run {run_id} in {self.path}; `latdoc runs` lists them")


def _open(path: str) -> sqlite3.Connection:
    if path != _MEMORY:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise UsageError(f"cannot open the latdoc store {path}: {exc}") from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
        check_version(conn, path)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA journal_mode = WAL")
        migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise UsageError(f"cannot use {path} as a latdoc store: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _verdict(diagnosis: Mapping[str, Any] | None) -> str | None:
    verdict = None if diagnosis is None else diagnosis.get("verdict")
    primary = verdict.get("primary") if isinstance(verdict, Mapping) else None
    return primary if isinstance(primary, str) else None


def _run_info(row: tuple[Any, ...]) -> RunInfo:
    (run_id, started, finished, status, endpoint, model, scenario, verdict, meta, notes, kind,
     n, bad) = row  # fmt: skip
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
    )


def _sample(row: tuple[Any, ...]) -> Sample:
    idx, step, target, concurrency, cold, loop_lag, trace = row
    return Sample(
        step=Step(step),
        trace=trace_from_record(json.loads(trace)),
        target_prompt_tokens=target,
        concurrency=concurrency,
        cold=bool(cold),
        index=idx,
        loop_lag_ms=loop_lag,
    )
