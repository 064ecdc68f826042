"""What every part of a :class:`~latdoc.store.Store` shares: one SQLite connection, its
write turns, the secrets it masks, its clock and the process that owns what it starts.

Each part (:mod:`.runs`, :mod:`.samples`, :mod:`.exchange`, :mod:`.queries`) is given
the one :class:`Connection` of its store, so a write of any part is a transaction of
the same connection, and a run id given by its prefix is resolved once, here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from latdoc.errors import NotFound, UsageError
from latdoc.i18n import Message
from latdoc.records import Sample
from latdoc.store import process
from latdoc.store._file import MEMORY, WriteTurns, open_store
from latdoc.store.redact import Redactor
from latdoc.store.rows import insert_run, insert_samples
from latdoc.store.run import RunInfo


class Connection:
    """A store's file opened once, with the secrets it masks, its clock and how long it
    waits for a lock."""

    def __init__(
        self,
        path: str,
        secrets: tuple[str, ...],
        clock: Callable[[], datetime],
        busy_timeout_ms: int,
        *,
        read_only: bool = False,
    ) -> None:
        self.path = path
        self.read_only = read_only
        self.secrets = secrets
        self.redactor = Redactor(secrets)
        self.clock = clock
        self.busy_timeout_ms = busy_timeout_ms
        self.sql = open_store(path, busy_timeout_ms, read_only=read_only)
        # A reader takes no turns: it leaves no turn file beside a store it only reads.
        self.turns = WriteTurns(MEMORY if read_only else path)
        self.owner = process.current()
        self.gone: set[str] = set()
        """Runs of this host found ``running`` with their process gone when the store
        opened; read as interrupted even when they could not be marked so."""

    def close(self) -> None:
        self.sql.close()
        self.turns.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.turns.turn():
            self.sql.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.sql.execute("ROLLBACK")
            raise
        self.sql.execute("COMMIT")

    def insert_run(
        self, info: RunInfo, meta: Mapping[str, Any], diagnosis: Mapping[str, Any] | None
    ) -> None:
        insert_run(self.sql, self.redactor, info, meta, diagnosis)

    def insert_samples(self, run_id: str, samples: Sequence[Sample]) -> None:
        insert_samples(self.sql, self.redactor, run_id, samples)

    def as_seen(self, run: RunInfo) -> RunInfo:
        """``run`` as it is: ``interrupted`` when its process is gone, also when this
        store could not be written to say so (a full disk, a read-only file)."""
        if run.status != "running" or run.run_id not in self.gone:
            return run
        return replace(run, status="interrupted")

    def exists(self, run_id: str) -> bool:
        row = self.sql.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return row is not None

    def resolve(self, prefix: str) -> str:
        """The id of the one run whose id is ``prefix`` or starts with it."""
        if prefix and self.exists(prefix):
            return prefix
        matches: list[str] = [
            row[0]
            for row in self.sql.execute(
                "SELECT run_id FROM runs WHERE substr(run_id, 1, ?) = ? ORDER BY run_id LIMIT 6",
                (len(prefix), prefix),
            )
        ]
        if not prefix or not matches:
            raise self.missing(prefix)
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
            raise UsageError(
                Message("run id {prefix!r} is ambiguous ({shown}); give more of it",
                        prefix=prefix, shown=shown)
            )  # fmt: skip
        return matches[0]

    def missing(self, run_id: str) -> NotFound:
        return NotFound(
            Message(
                "no run {run} in {path}; `latdoc runs` lists them", run=run_id, path=str(self.path)
            )
        )
