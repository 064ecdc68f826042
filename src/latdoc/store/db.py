"""Runs and their traces in SQLite: :class:`Store`.

One file (see :func:`default_path`) holds every diagnosis run: a ``runs`` row
per run, a narrow ``samples`` row per measured request with the numbers reports
aggregate (:meth:`Store.aggregate`), and its full trace record as JSON in
``sample_traces``. Each sample is committed as it is added, so a run that is
interrupted keeps every trace it finished; busy writers batch their commits
(:meth:`Store.batch`). The
journal is WAL, foreign keys are enforced, and the schema is versioned
(:mod:`latdoc.store.schema`; the file is opened in :mod:`._file`). How a run and a
sample become rows is :mod:`latdoc.store.rows`. Nothing that looks like a credential
is written (:mod:`latdoc.store.redact`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from secrets import token_hex
from types import TracebackType
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from latdoc.errors import UsageError
from latdoc.records import Sample, Step, StepNote
from latdoc.store import process
from latdoc.store._file import WriteTurns, default_path, open_store
from latdoc.store.aggregate import BucketStats, aggregate_samples, bucket_ttfts
from latdoc.store.exchange import dump_run, load_document
from latdoc.store.redact import Redactor
from latdoc.store.rows import (
    RUN_COLUMNS,
    SAMPLE_COLUMNS,
    insert_run,
    insert_samples,
    json_text,
    owner_row,
    run_from_row,
    sample_from_row,
    verdict_of,
)
from latdoc.store.run import RUN_KINDS, RUN_STATUSES, RunInfo, notes_to_data, utc_text
from latdoc.store.schema import SCHEMA_VERSION
from latdoc.store.writer import DEFAULT_MAX_DELAY, DEFAULT_MAX_SAMPLES, SampleWriter

__all__ = ["SCHEMA_VERSION", "BucketStats", "RunInfo", "SampleWriter", "Store", "default_path"]


_IMPORT_BATCH = 5000
"""Samples inserted at once while importing."""
_READ_BATCH = 1000
"""Rows read at once by :meth:`Store.iter_samples`."""


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
        self._secrets = tuple(secrets)
        self._redactor = Redactor(self._secrets)
        self._clock = clock
        self._closing: list[Callable[[], None]] = []
        self._closed = False
        self._conn = open_store(self.path)
        self._turns = WriteTurns(self.path)
        self._owner = process.current()
        self._gone: set[str] = set()
        try:
            self._mark_gone()
        except sqlite3.OperationalError:
            # Read-only, busy or full: the runs are marked by the next open that can
            # write, and read as interrupted until then (:meth:`_as_seen`).
            pass
        except BaseException:
            self._conn.close()
            self._turns.close()
            raise

    def close(self) -> None:
        """Run what :meth:`on_close` registered, newest first, then close the file; once."""
        if self._closed:
            return
        self._closed = True
        try:
            while self._closing:
                self._closing.pop()()
        finally:
            self._conn.close()
            self._turns.close()

    def sibling(self) -> Store:
        """Another connection to the same file, with the same secrets masked: for a thread
        of its own (a connection serves the thread that opened it)."""
        if self.path == ":memory:":
            raise UsageError("a store in memory has no second connection")
        return Store(self.path, secrets=self._secrets, clock=self._clock)

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the store closes, before its file does (what a
        recording writes last)."""
        self._closing.append(callback)

    def forget_on_close(self, callback: Callable[[], None]) -> None:
        """No longer call ``callback`` when the store closes."""
        with suppress(ValueError):
            self._closing.remove(callback)

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
                run_id, started, None, "running", endpoint, model, scenario, 0, 0, None,
                kind=kind, owner=self._owner,
            )  # fmt: skip
            self._insert_run(info, meta, None)
        return run_id

    def add_sample(self, run_id: str, sample: Sample) -> None:
        """Store one sample of ``run_id`` and commit it at once."""
        self.add_samples(run_id, (sample,))

    def add_samples(self, run_id: str, samples: Sequence[Sample]) -> None:
        """Store several samples of ``run_id`` in one commit (one disk sync for all)."""
        if not samples:
            return
        with self._transaction():
            if not self._exists(run_id):
                raise self._missing(run_id)
            self._insert_samples(run_id, samples)

    def batch(
        self,
        run_id: str,
        *,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        max_delay: float = DEFAULT_MAX_DELAY,
    ) -> SampleWriter:
        """A writer that adds samples of ``run_id`` in batches: committed every
        ``max_samples`` samples, when the oldest held one has waited ``max_delay``
        seconds, and when its ``with`` block ends.

        ::

            with store.batch(run_id) as writer:
                for sample in samples:
                    writer.add(sample)
        """
        if not self._exists(run_id):
            raise self._missing(run_id)
        return SampleWriter(self, run_id, max_samples=max_samples, max_delay=max_delay)

    def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        diagnosis: Mapping[str, Any] | None,
        notes: Sequence[StepNote] = (),
    ) -> None:
        """Close a run as ``done``, ``interrupted``, ``failed`` or ``recorded``, with its
        notes and its diagnosis document if any."""
        if status not in RUN_STATUSES - {"running"}:
            raise ValueError(f"status {status!r}: use done, interrupted, failed or recorded")
        clean = None if diagnosis is None else self._redactor.value(diagnosis)
        kept = json_text(self._redactor.value(notes_to_data(notes)))
        with self._transaction():
            finished = utc_text(self._clock())
            updated = self._conn.execute(
                "UPDATE runs SET finished_at = ?, status = ?, verdict = ?, diagnosis = ?, "
                "notes = ? WHERE run_id = ?",
                (finished, status, verdict_of(clean), json_text(clean), kept, run_id),
            ).rowcount
            if updated == 0:
                raise self._missing(run_id)

    def update_meta(self, run_id: str, values: Mapping[str, Any]) -> None:
        """Set top-level keys of a run's ``meta`` (what a long run counts as it goes, what
        was learnt only after it began); each value is stored whole, nulls included."""
        clean = self._redactor.value(dict(values), mask_names=True)
        with self._transaction():
            for key, value in clean.items():
                updated = self._conn.execute(
                    "UPDATE runs SET meta = json_set(meta, ?, json(?)) WHERE run_id = ?",
                    (f'$."{key}"', json_text(value), run_id),
                ).rowcount
                if updated == 0:
                    raise self._missing(run_id)

    def reopen_run(self, run_id: str) -> None:
        """Mark a finished run ``running`` again, to append samples (a resumed watch); this
        process keeps it from now on."""
        with self._transaction():
            updated = self._conn.execute(
                "UPDATE runs SET finished_at = NULL, status = 'running', pid = ?, host = ?, "
                "boot_id = ?, pid_started = ? WHERE run_id = ?",
                (*owner_row(self._owner), run_id),
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
            self._insert_samples(run_id, document.samples)
        return run_id

    def import_run(
        self, run: RunInfo, diagnosis: Mapping[str, Any] | None, samples: Iterable[Sample]
    ) -> tuple[str, int]:
        """Add ``run`` and its samples, read as they come (any number, in bounded
        memory), in one transaction: a sample that fails to arrive (its reader raises)
        leaves the store as it was. Return the run's id and the samples added."""
        added = 0
        with self._transaction():
            if self._exists(run.run_id):
                raise UsageError(f"run {run.run_id} is already in {self.path}")
            self._insert_run(run, run.meta, diagnosis)
            batch: list[Sample] = []
            for sample in samples:
                batch.append(sample)
                if len(batch) >= _IMPORT_BATCH:
                    self._insert_samples(run.run_id, batch)
                    added += len(batch)
                    batch = []
            self._insert_samples(run.run_id, batch)
            added += len(batch)
        return run.run_id, added

    def choose_runs(
        self, statuses: Collection[str], *, started_before: datetime | None = None
    ) -> list[RunInfo]:
        """The runs whose status is one of ``statuses`` (and that started before
        ``started_before``, if given), oldest first; a ``running`` run whose process is
        alive on this host is never chosen."""
        unknown = set(statuses) - RUN_STATUSES
        if unknown:
            raise UsageError(
                f"status {', '.join(sorted(unknown))}: use one of {', '.join(sorted(RUN_STATUSES))}"
            )
        query = f"SELECT {RUN_COLUMNS} FROM runs WHERE status IN (SELECT value FROM json_each(?))"
        params: list[Any] = [json_text(sorted(statuses))]
        if started_before is not None:
            query += " AND started_at < ?"
            params.append(utc_text(started_before))
        rows = self._conn.execute(query + " ORDER BY started_at, run_id", params)
        return [
            run
            for run in map(run_from_row, rows)
            if not (run.status == "running" and self._alive_here(run))
        ]

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Remove the runs ``run_ids`` with their samples; return how many were removed."""
        with self._transaction():
            removed = 0
            for run_id in run_ids:
                removed += self._conn.execute(
                    "DELETE FROM runs WHERE run_id = ?", (run_id,)
                ).rowcount
        return removed

    def _alive_here(self, run: RunInfo) -> bool:
        owner = run.owner
        return (
            owner is not None
            and owner.host == self._owner.host
            and not process.is_gone(owner, self._owner)
        )

    def _mark_gone(self) -> None:
        """Mark ``interrupted`` every ``running`` run of this host whose process has ended,
        with a note of what it kept; its end is the end of its last kept trace."""
        rows = self._conn.execute(
            "SELECT run_id, pid, host, boot_id, pid_started FROM runs "
            "WHERE status = 'running' AND host = ?",
            (self._owner.host,),
        ).fetchall()
        gone = [
            row[0]
            for row in rows
            if process.is_gone(process.Owner(row[1], row[2], row[3], row[4]), self._owner)
        ]
        self._gone = set(gone)
        for run_id in gone:
            with self._transaction():
                kept, last_ns = self._conn.execute(
                    "SELECT count(*), max(started_ns + coalesce(total_ms, 0) * 1e6) "
                    "FROM samples WHERE run_id = ?",
                    (run_id,),
                ).fetchone()
                row = self._conn.execute(
                    "SELECT pid, host, notes, started_at FROM runs "
                    "WHERE run_id = ? AND status = 'running'",
                    (run_id,),
                ).fetchone()
                if row is None:
                    self._gone.discard(run_id)
                    continue
                pid, host, notes, started = row
                note = {
                    "step": Step.RUN.value,
                    "text": f"interrupted: its process (pid {pid} on {host}) ended without "
                    f"closing the run; {kept} trace{'' if kept == 1 else 's'} kept",
                }
                earlier = [] if notes is None else json.loads(notes)
                ended = (
                    started
                    if last_ns is None
                    else utc_text(datetime.fromtimestamp(last_ns / 1e9, UTC))
                )
                self._conn.execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = ?, notes = ? "
                    "WHERE run_id = ?",
                    (ended, json_text([*earlier, note]), run_id),
                )
            self._gone.discard(run_id)

    def _as_seen(self, run: RunInfo) -> RunInfo:
        """``run`` as it is: ``interrupted`` when its process is gone, also when this
        store could not be written to say so (a full disk, a read-only file)."""
        if run.status != "running" or run.run_id not in self._gone:
            return run
        return replace(run, status="interrupted")

    # -- reading ---------------------------------------------------------------

    def list_runs(self, limit: int = 50) -> list[RunInfo]:
        """Up to ``limit`` runs, newest first."""
        rows = self._conn.execute(
            f"SELECT {RUN_COLUMNS} FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?",
            (limit,),
        )
        return [self._as_seen(run_from_row(row)) for row in rows]

    def find_runs(self, kind: str, name: str | None = None) -> list[RunInfo]:
        """Runs of ``kind`` (with ``meta["name"] == name`` if given), newest first."""
        query = f"SELECT {RUN_COLUMNS} FROM runs WHERE kind = ?"
        params: tuple[str, ...] = (kind,)
        if name is not None:
            query += " AND json_extract(meta, '$.name') = ?"
            params = (kind, name)
        rows = self._conn.execute(query + " ORDER BY started_at DESC, run_id DESC", params)
        return [self._as_seen(run_from_row(row)) for row in rows]

    def spent(self, run_id: str) -> tuple[int, int, int]:
        """What a run has sent: requests, prompt + output tokens as counted, next sample index."""
        requests, prompt, output, last = self._conn.execute(
            "SELECT count(*), coalesce(sum(prompt_tokens), 0), "
            "coalesce(sum(output_tokens), 0), max(idx) "
            "FROM samples WHERE run_id = ?",
            (self._resolve(run_id),),
        ).fetchone()
        return requests, prompt + output, 0 if last is None else last + 1

    def prompt_tokens(self, run_id: str, step: Step) -> list[int | None]:
        """The prompt tokens each of a run's samples of ``step`` was counted at, in order,
        from the narrow rows (no trace is decoded)."""
        rows = self._conn.execute(
            "SELECT prompt_tokens FROM samples WHERE run_id = ? AND step = ? ORDER BY idx, seq",
            (self._resolve(run_id), step.value),
        )
        return [row[0] for row in rows]

    def run_info(self, run_id: str) -> RunInfo:
        """A run's info by its id or a unique prefix of it, without its samples."""
        full_id = self._resolve(run_id)
        row = self._conn.execute(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (full_id,)
        ).fetchone()
        return self._as_seen(run_from_row(row))

    def load_run(self, run_id: str) -> tuple[RunInfo, list[Sample], Mapping[str, Any] | None]:
        """A run by its id or a unique prefix of it: its info, samples in order, diagnosis."""
        full_id = self._resolve(run_id)
        row = self._conn.execute(
            f"SELECT {RUN_COLUMNS}, diagnosis FROM runs WHERE run_id = ?", (full_id,)
        ).fetchone()
        samples = self._conn.execute(
            f"SELECT {SAMPLE_COLUMNS} FROM samples JOIN sample_traces USING (seq) "
            "WHERE run_id = ? ORDER BY idx, seq",
            (full_id,),
        )
        diagnosis = row[-1]
        return (
            self._as_seen(run_from_row(row[:-1])),
            [sample_from_row(r) for r in samples],
            None if diagnosis is None else json.loads(diagnosis),
        )

    def aggregate(
        self,
        run_ids: str | Sequence[str] = (),
        *,
        name: str | None = None,
        bucket: timedelta = timedelta(hours=1),
        cycle: timedelta | None = None,
        offset: timedelta = timedelta(0),
        steps: Sequence[Step] | None = None,
    ) -> tuple[BucketStats, ...]:
        """The samples of one or more runs (ids or unique prefixes), and of every run named
        ``name`` (``meta["name"]``, as a resumable run records it), summarised per bucket
        of their wall-clock start, without reading a trace record: requests and errors
        of all, TTFT and TPOT percentiles of the successful ones.

        ``bucket`` is the width; with a ``cycle`` buckets are counted around it
        (``bucket=1 h, cycle=1 day`` gives the hours of the day, 0 to 23). Buckets
        are in UTC; ``offset`` is added to every start first (``+2 h`` for a UTC+2
        day). ``steps`` keeps only the samples of those steps. Samples without a
        wall-clock start are left out.
        """
        return aggregate_samples(
            self._conn,
            self._run_ids(run_ids, name),
            bucket=bucket,
            cycle=cycle,
            offset=offset,
            steps=steps,
        )

    def bucket_ttfts(
        self,
        run_ids: str | Sequence[str] = (),
        *,
        name: str | None = None,
        bucket: timedelta = timedelta(hours=1),
        cycle: timedelta | None = None,
        offset: timedelta = timedelta(0),
        steps: Sequence[Step] | None = None,
        cold: bool | None = None,
        target_prompt_tokens: int | None = None,
    ) -> dict[int, npt.NDArray[np.float64]]:
        """The TTFTs (ms) of the successful samples of the runs chosen as :meth:`aggregate`
        chooses them, per bucket numbered as it numbers them, in sample order, read from
        the narrow ``samples`` rows. ``cold`` keeps only cold (``True``) or warm samples,
        ``target_prompt_tokens`` only those of that prompt length."""
        return bucket_ttfts(
            self._conn,
            self._run_ids(run_ids, name),
            bucket=bucket,
            cycle=cycle,
            offset=offset,
            steps=steps,
            cold=cold,
            target_prompt_tokens=target_prompt_tokens,
        )

    def diagnosis_document(self, run_id: str) -> Mapping[str, Any] | None:
        """The diagnosis document a run keeps, without reading its samples."""
        row = self._conn.execute(
            "SELECT diagnosis FROM runs WHERE run_id = ?", (self._resolve(run_id),)
        ).fetchone()
        return None if row is None or row[0] is None else json.loads(row[0])

    def iter_samples(self, run_id: str) -> Iterator[Sample]:
        """The samples of a run (an id or a unique prefix) in order, read from the file a
        few at a time as they are asked for: any number in bounded memory."""
        cursor = self._conn.execute(
            f"SELECT {SAMPLE_COLUMNS} FROM samples JOIN sample_traces USING (seq) "
            "WHERE run_id = ? ORDER BY idx, seq",
            (self._resolve(run_id),),
        )
        while rows := cursor.fetchmany(_READ_BATCH):
            yield from (sample_from_row(r) for r in rows)

    def export_json(self, run_id: str) -> str:
        """The run as one self-describing JSON document (``{"format": "latdoc-run", ...}``)."""
        info, samples, diagnosis = self.load_run(run_id)
        return dump_run(info, samples, diagnosis)

    # -- internals -------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._turns.turn():
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
        insert_run(self._conn, self._redactor, info, meta, diagnosis)

    def _insert_samples(self, run_id: str, samples: Sequence[Sample]) -> None:
        insert_samples(self._conn, self._redactor, run_id, samples)

    def _run_ids(self, run_ids: str | Sequence[str], name: str | None) -> list[str]:
        wanted = [run_ids] if isinstance(run_ids, str) else list(run_ids)
        full_ids = {self._resolve(r) for r in wanted}
        if name is not None:
            named = self._conn.execute(
                "SELECT run_id FROM runs WHERE json_extract(meta, '$.name') = ?", (name,)
            ).fetchall()
            if not named:
                raise UsageError(f"no run named {name!r} in {self.path}")
            full_ids.update(row[0] for row in named)
        if not full_ids:
            raise UsageError("name the runs to aggregate: run ids or a name")
        return sorted(full_ids)

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
