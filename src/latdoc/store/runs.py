"""The runs of a store, without their samples: :class:`Runs`.

A run is started (:meth:`Runs.new_run`), closed with its status, notes and diagnosis
(:meth:`Runs.finish_run`), reopened to append to, listed, found by kind or name, and
deleted with its samples. A run left ``running`` by a process that has ended is marked
``interrupted`` when a store next opens on its host (:meth:`Runs.mark_gone`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from secrets import token_hex
from typing import Any

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.records import Step, StepNote
from latdoc.store import process
from latdoc.store._connection import Connection
from latdoc.store.rows import RUN_COLUMNS, json_text, owner_row, run_from_row, verdict_of
from latdoc.store.run import (
    DIAGNOSE_KIND,
    RUN_KINDS,
    RUN_STATUSES,
    RunInfo,
    notes_to_data,
    utc_text,
)


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing shows: an endpoint (its URL, or a part of it), a kind, and
    runs started from ``since`` and before ``until``; ``None`` leaves a field open."""

    endpoint: str | None = None
    kind: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def sql(self) -> tuple[list[str], list[Any]]:
        """The ``WHERE`` terms on ``runs`` and their parameters."""
        where: list[str] = []
        params: list[Any] = []
        if self.endpoint:
            where.append("instr(endpoint, ?) > 0")
            params.append(self.endpoint)
        if self.kind:
            where.append("kind = ?")
            params.append(self.kind)
        if self.since is not None:
            where.append("started_at >= ?")
            params.append(utc_text(self.since))
        if self.until is not None:
            where.append("started_at < ?")
            params.append(utc_text(self.until))
        return where, params


@dataclass(frozen=True)
class RunProgress:
    """How far a run has come, as a live page follows it."""

    run_id: str
    status: str
    finished: bool
    samples: int
    last_seq: int
    """The newest of its samples' sequence numbers (0: none yet): a change is news."""


class Runs:
    """The runs of one store's connection."""

    def __init__(self, connection: Connection) -> None:
        self._db = connection

    # -- writing ---------------------------------------------------------------

    def new_run(
        self,
        *,
        endpoint: str,
        model: str,
        scenario: str,
        meta: Mapping[str, Any],
        kind: str = DIAGNOSE_KIND,
    ) -> str:
        """Record the start of a run; return its id, e.g. ``20261129-201502-a1b2c3``."""
        if kind not in RUN_KINDS:
            raise ValueError(f"kind {kind!r}: use one of {sorted(RUN_KINDS)}")
        started = self._db.clock()
        with self._db.transaction():
            run_id = f"{started.astimezone(UTC):%Y%m%d-%H%M%S}-{token_hex(3)}"
            while self._db.exists(run_id):
                run_id = f"{run_id[:15]}-{token_hex(3)}"
            info = RunInfo(
                run_id, started, None, "running", endpoint, model, scenario, 0, 0, None,
                kind=kind, owner=self._db.owner,
            )  # fmt: skip
            self._db.insert_run(info, meta, None)
        return run_id

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
        redactor = self._db.redactor
        clean = None if diagnosis is None else redactor.value(diagnosis)
        kept = json_text(redactor.value(notes_to_data(notes)))
        with self._db.transaction():
            finished = utc_text(self._db.clock())
            updated = self._db.sql.execute(
                "UPDATE runs SET finished_at = ?, status = ?, verdict = ?, diagnosis = ?, "
                "notes = ? WHERE run_id = ?",
                (finished, status, verdict_of(clean), json_text(clean), kept, run_id),
            ).rowcount
            if updated == 0:
                raise self._db.missing(run_id)

    def update_meta(self, run_id: str, values: Mapping[str, Any]) -> None:
        """Set top-level keys of a run's ``meta`` (what a long run counts as it goes, what
        was learnt only after it began); each value is stored whole, nulls included."""
        clean = self._db.redactor.value(dict(values), mask_names=True)
        with self._db.transaction():
            for key, value in clean.items():
                updated = self._db.sql.execute(
                    "UPDATE runs SET meta = json_set(meta, ?, json(?)) WHERE run_id = ?",
                    (f'$."{key}"', json_text(value), run_id),
                ).rowcount
                if updated == 0:
                    raise self._db.missing(run_id)

    def reopen_run(self, run_id: str) -> None:
        """Mark a finished run ``running`` again, to append samples (a resumed watch); this
        process keeps it from now on."""
        with self._db.transaction():
            updated = self._db.sql.execute(
                "UPDATE runs SET finished_at = NULL, status = 'running', pid = ?, host = ?, "
                "boot_id = ?, pid_started = ? WHERE run_id = ?",
                (*owner_row(self._db.owner), run_id),
            ).rowcount
            if updated == 0:
                raise self._db.missing(run_id)

    def choose_runs(
        self, statuses: Collection[str] | None = None, *, started_before: datetime | None = None
    ) -> list[RunInfo]:
        """The runs whose status is one of ``statuses`` (``None``: every status but
        ``running``; and that started before ``started_before``, if given), oldest first;
        a ``running`` run whose process is alive on this host is never chosen."""
        if statuses is None:
            statuses = RUN_STATUSES - {"running"}
        unknown = set(statuses) - RUN_STATUSES
        if unknown:
            raise UsageError(
                Message(
                    "status {unknown}: use one of {statuses}",
                    unknown=", ".join(sorted(unknown)),
                    statuses=", ".join(sorted(RUN_STATUSES)),
                )
            )
        query = f"SELECT {RUN_COLUMNS} FROM runs WHERE status IN (SELECT value FROM json_each(?))"
        params: list[Any] = [json_text(sorted(statuses))]
        if started_before is not None:
            query += " AND started_at < ?"
            params.append(utc_text(started_before))
        rows = self._db.sql.execute(query + " ORDER BY started_at, run_id", params)
        return [
            run
            for run in map(run_from_row, rows)
            if not (run.status == "running" and self._alive_here(run))
        ]

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Remove the runs ``run_ids`` with their samples; return how many were removed."""
        with self._db.transaction():
            removed = 0
            for run_id in run_ids:
                removed += self._db.sql.execute(
                    "DELETE FROM runs WHERE run_id = ?", (run_id,)
                ).rowcount
        return removed

    def mark_gone(self, *, write: bool = True) -> None:
        """Mark ``interrupted`` every ``running`` run of this host whose process has ended,
        with a note of what it kept; its end is the end of its last kept trace. Without
        ``write`` they are only read as interrupted (:meth:`Connection.as_seen`)."""
        here = self._db.owner
        rows = self._db.sql.execute(
            "SELECT run_id, pid, host, boot_id, pid_started FROM runs "
            "WHERE status = 'running' AND host = ?",
            (here.host,),
        ).fetchall()
        gone = [
            row[0]
            for row in rows
            if process.is_gone(process.Owner(row[1], row[2], row[3], row[4]), here)
        ]
        self._db.gone = set(gone)
        if not write:
            return
        for run_id in gone:
            with self._db.transaction():
                self._mark_interrupted(run_id)
            self._db.gone.discard(run_id)

    def _mark_interrupted(self, run_id: str) -> None:
        sql = self._db.sql
        kept, last_ns = sql.execute(
            "SELECT count(*), max(started_ns + coalesce(total_ms, 0) * 1e6) "
            "FROM samples WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        row = sql.execute(
            "SELECT pid, host, notes, started_at FROM runs WHERE run_id = ? AND status = 'running'",
            (run_id,),
        ).fetchone()
        if row is None:
            return
        pid, host, notes, started = row
        note = {
            "step": Step.RUN.value,
            "text": f"interrupted: its process (pid {pid} on {host}) ended without "
            f"closing the run; {kept} trace{'' if kept == 1 else 's'} kept",
        }
        earlier = [] if notes is None else json.loads(notes)
        ended = started if last_ns is None else utc_text(datetime.fromtimestamp(last_ns / 1e9, UTC))
        sql.execute(
            "UPDATE runs SET status = 'interrupted', finished_at = ?, notes = ? WHERE run_id = ?",
            (ended, json_text([*earlier, note]), run_id),
        )

    def _alive_here(self, run: RunInfo) -> bool:
        owner, here = run.owner, self._db.owner
        return owner is not None and owner.host == here.host and not process.is_gone(owner, here)

    # -- reading ---------------------------------------------------------------

    def list_runs(self, limit: int = 50) -> list[RunInfo]:
        """Up to ``limit`` runs, newest first."""
        rows = self._db.sql.execute(
            f"SELECT {RUN_COLUMNS} FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?",
            (limit,),
        )
        return [self._db.as_seen(run_from_row(row)) for row in rows]

    def page_runs(
        self, chosen: RunFilter = RunFilter(), *, after: str | None = None, limit: int = 50
    ) -> list[RunInfo]:
        """Up to ``limit`` of the runs ``chosen`` picks, newest first, beginning after the
        run ``after`` (the last of the page before): a page costs the same at the ten
        thousandth run as at the first, since no earlier page is counted past."""
        where, params = chosen.sql()
        if after is not None:
            where.append(
                "(started_at, run_id) < (SELECT started_at, run_id FROM runs WHERE run_id = ?)"
            )
            params.append(after)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._db.sql.execute(
            f"SELECT {RUN_COLUMNS} FROM runs{clause} ORDER BY started_at DESC, run_id DESC LIMIT ?",
            (*params, limit),
        )
        return [self._db.as_seen(run_from_row(row)) for row in rows]

    def count_runs(self, chosen: RunFilter = RunFilter()) -> int:
        """How many runs ``chosen`` picks."""
        where, params = chosen.sql()
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return int(self._db.sql.execute(f"SELECT count(*) FROM runs{clause}", params).fetchone()[0])

    def progress(self, run_id: str) -> RunProgress:
        """How far a run has come: its status as seen, and its samples so far (a live
        page asks this every second, so it reads two indexed counts, no trace)."""
        full_id = self._db.resolve(run_id)
        status, finished = self._db.sql.execute(
            "SELECT status, finished_at FROM runs WHERE run_id = ?", (full_id,)
        ).fetchone()
        samples, last = self._db.sql.execute(
            "SELECT count(*), coalesce(max(seq), 0) FROM samples WHERE run_id = ?", (full_id,)
        ).fetchone()
        if status == "running" and full_id in self._db.gone:
            status = "interrupted"
        return RunProgress(full_id, status, finished is not None, int(samples), int(last))

    def mark(self) -> tuple[int, int, int]:
        """What changes when any run is added, written or finished: the runs, the newest
        sample's sequence number, and the runs still running (a live listing compares
        one with the next)."""
        runs, last, running = self._db.sql.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT coalesce(max(seq), 0) FROM samples), "
            "(SELECT count(*) FROM runs WHERE status = 'running')"
        ).fetchone()
        return int(runs), int(last), int(running)

    def costs(self, run_ids: Sequence[str]) -> dict[str, float]:
        """The cost each of ``run_ids`` recorded in its document, in dollars, where it
        recorded one (a diagnosis with a price): what a listing shows without decoding a
        trace."""
        rows = self._db.sql.execute(
            "SELECT run_id, json_extract(diagnosis, '$.cost.total') FROM runs "
            "WHERE run_id IN (SELECT value FROM json_each(?)) AND json_valid(diagnosis)",
            (json_text(list(run_ids)),),
        )
        return {run_id: float(total) for run_id, total in rows if total is not None}

    def endpoints(self, limit: int = 200) -> list[str]:
        """The endpoints the store has runs of, most recently used first (a filter's
        choices)."""
        # Each endpoint is found from the one before it in the index on endpoints, and
        # its last start read there too: a step per endpoint, not one per run.
        rows = self._db.sql.execute(
            "WITH RECURSIVE seen (endpoint) AS ("
            " SELECT min(endpoint) FROM runs"
            " UNION ALL SELECT (SELECT min(endpoint) FROM runs WHERE endpoint > seen.endpoint)"
            " FROM seen WHERE seen.endpoint IS NOT NULL) "
            "SELECT endpoint FROM seen WHERE endpoint IS NOT NULL ORDER BY "
            "(SELECT max(started_at) FROM runs WHERE runs.endpoint = seen.endpoint) DESC LIMIT ?",
            (limit,),
        )
        return [row[0] for row in rows]

    def target_runs(
        self,
        kind: str,
        endpoint: str,
        model: str,
        *,
        after: datetime | None = None,
        before: datetime | None = None,
        newest_first: bool = True,
        limit: int | None = None,
    ) -> list[RunInfo]:
        """Up to ``limit`` runs of ``kind`` on ``endpoint`` and ``model`` exactly, started
        after ``after`` and before ``before`` (``None`` leaves a side open), newest first
        unless not ``newest_first``: the run before or after another of the same target,
        read from the index on kinds, not from every run of the kind."""
        where = ["kind = ?", "endpoint = ?", "model = ?"]
        params: list[Any] = [kind, endpoint, model]
        if after is not None:
            where.append("started_at > ?")
            params.append(utc_text(after))
        if before is not None:
            where.append("started_at < ?")
            params.append(utc_text(before))
        order = "DESC" if newest_first else "ASC"
        rows = self._db.sql.execute(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE {' AND '.join(where)} "
            f"ORDER BY started_at {order}, run_id {order} LIMIT ?",
            (*params, -1 if limit is None else limit),
        )
        return [self._db.as_seen(run_from_row(row)) for row in rows]

    def find_runs(
        self, kind: str, name: str | None = None, *, experiment: str | None = None
    ) -> list[RunInfo]:
        """Runs of ``kind`` (with ``meta["name"] == name`` and ``meta["experiment"] ==
        experiment`` if given), newest first; the meta is matched in SQL, so only the runs
        found are read."""
        query = f"SELECT {RUN_COLUMNS} FROM runs WHERE kind = ?"
        params: tuple[str, ...] = (kind,)
        if name is not None:
            query += " AND json_extract(meta, '$.name') = ?"
            params = (*params, name)
        if experiment is not None:
            query += " AND json_extract(meta, '$.experiment') = ?"
            params = (*params, experiment)
        rows = self._db.sql.execute(query + " ORDER BY started_at DESC, run_id DESC", params)
        return [self._db.as_seen(run_from_row(row)) for row in rows]

    def run_info(self, run_id: str) -> RunInfo:
        """A run's info by its id or a unique prefix of it, without its samples."""
        full_id = self._db.resolve(run_id)
        row = self._db.sql.execute(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (full_id,)
        ).fetchone()
        return self._db.as_seen(run_from_row(row))

    def diagnosis_document(self, run_id: str) -> Mapping[str, Any] | None:
        """The diagnosis document a run keeps, without reading its samples."""
        row = self._db.sql.execute(
            "SELECT diagnosis FROM runs WHERE run_id = ?", (self._db.resolve(run_id),)
        ).fetchone()
        return None if row is None or row[0] is None else json.loads(row[0])
