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

A store is four parts on one connection, each reachable on its own by a caller that
needs only it: :attr:`Store.runs` (:class:`~latdoc.store.runs.Runs`),
:attr:`Store.samples` (:class:`~latdoc.store.samples.Samples`, with the batch
writer), :attr:`Store.exchange` (:class:`~latdoc.store.exchange.Exchange`, whole runs
in and out) and :attr:`Store.queries` (:class:`~latdoc.store.queries.Queries`,
summaries of the narrow rows). Each of their methods is a method of :class:`Store`
too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from latdoc.errors import UsageError
from latdoc.i18n import N_
from latdoc.records import Sample, Step, StepNote
from latdoc.store._connection import Connection
from latdoc.store._file import BUSY_TIMEOUT_MS, default_path
from latdoc.store.aggregate import BucketStats
from latdoc.store.exchange import Exchange
from latdoc.store.queries import Queries
from latdoc.store.run import DIAGNOSE_KIND, RunInfo
from latdoc.store.runs import Runs
from latdoc.store.samples import Samples
from latdoc.store.schema import SCHEMA_VERSION
from latdoc.store.writer import DEFAULT_MAX_DELAY, DEFAULT_MAX_SAMPLES, SampleWriter

__all__ = [
    "BUSY_TIMEOUT_MS",
    "SCHEMA_VERSION",
    "BucketStats",
    "RunInfo",
    "SampleWriter",
    "Store",
    "default_path",
]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Store:
    """A latdoc store on one SQLite connection; use it as a context manager.

    ``path`` defaults to :func:`default_path`; ``":memory:"`` keeps nothing.
    ``secrets`` are exact strings (the API key in use) masked wherever they
    would be written; ``clock`` gives run start and finish times.
    ``busy_timeout_ms`` is how long a statement waits for a lock another connection
    holds before it fails with "database is locked" (:data:`BUSY_TIMEOUT_MS`): a
    recording that would rather lose records than keep them waiting sets it lower.
    ``read_only`` opens an existing store without ever writing it (``latdoc serve``,
    which reads what other processes write): a run whose process has gone reads as
    interrupted, and is left for a writer to mark so.
    """

    runs: Runs
    samples: Samples
    exchange: Exchange
    queries: Queries

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        secrets: Iterable[str] = (),
        clock: Callable[[], datetime] = _utc_now,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        read_only: bool = False,
    ) -> None:
        self.path = str(default_path() if path is None else path)
        self._closing: list[Callable[[], None]] = []
        self._closed = False
        self._db = Connection(
            self.path, tuple(secrets), clock, busy_timeout_ms, read_only=read_only
        )
        self.runs = Runs(self._db)
        self.samples = Samples(self._db)
        self.exchange = Exchange(self._db, self.samples)
        self.queries = Queries(self._db)
        try:
            self.runs.mark_gone(write=not read_only)
        except sqlite3.OperationalError:
            # Read-only, busy or full: the runs are marked by the next open that can
            # write, and read as interrupted until then.
            pass
        except BaseException:
            self._db.close()
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
            self._db.close()

    def sibling(self) -> Store:
        """Another connection to the same file, with the same secrets masked and the same
        busy timeout: for a thread of its own (a connection serves the thread that opened
        it)."""
        if self.path == ":memory:":
            raise UsageError(N_("a store in memory has no second connection"))
        db = self._db
        return Store(
            self.path, secrets=db.secrets, clock=db.clock, busy_timeout_ms=db.busy_timeout_ms
        )

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

    # -- runs (:class:`Runs`) ----------------------------------------------------

    def new_run(
        self,
        *,
        endpoint: str,
        model: str,
        scenario: str,
        meta: Mapping[str, Any],
        kind: str = DIAGNOSE_KIND,
    ) -> str:
        """:meth:`Runs.new_run`: record the start of a run; return its id."""
        return self.runs.new_run(
            endpoint=endpoint, model=model, scenario=scenario, meta=meta, kind=kind
        )

    def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        diagnosis: Mapping[str, Any] | None,
        notes: Sequence[StepNote] = (),
    ) -> None:
        """:meth:`Runs.finish_run`: close a run with its status, notes and diagnosis."""
        self.runs.finish_run(run_id, status=status, diagnosis=diagnosis, notes=notes)

    def update_meta(self, run_id: str, values: Mapping[str, Any]) -> None:
        """:meth:`Runs.update_meta`: set top-level keys of a run's ``meta``."""
        self.runs.update_meta(run_id, values)

    def reopen_run(self, run_id: str) -> None:
        """:meth:`Runs.reopen_run`: mark a finished run ``running`` again."""
        self.runs.reopen_run(run_id)

    def choose_runs(
        self, statuses: Collection[str] | None = None, *, started_before: datetime | None = None
    ) -> list[RunInfo]:
        """:meth:`Runs.choose_runs`: the runs of these statuses (``None``: all but
        ``running``), oldest first."""
        return self.runs.choose_runs(statuses, started_before=started_before)

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """:meth:`Runs.delete_runs`: remove runs with their samples; how many were."""
        return self.runs.delete_runs(run_ids)

    def list_runs(self, limit: int = 50) -> list[RunInfo]:
        """:meth:`Runs.list_runs`: up to ``limit`` runs, newest first."""
        return self.runs.list_runs(limit)

    def find_runs(
        self, kind: str, name: str | None = None, *, experiment: str | None = None
    ) -> list[RunInfo]:
        """:meth:`Runs.find_runs`: runs of ``kind`` (and ``name``, and ``experiment``),
        newest first."""
        return self.runs.find_runs(kind, name, experiment=experiment)

    def run_info(self, run_id: str) -> RunInfo:
        """:meth:`Runs.run_info`: a run's info, without its samples."""
        return self.runs.run_info(run_id)

    def diagnosis_document(self, run_id: str) -> Mapping[str, Any] | None:
        """:meth:`Runs.diagnosis_document`: the diagnosis document a run keeps."""
        return self.runs.diagnosis_document(run_id)

    # -- samples (:class:`Samples`) ----------------------------------------------

    def add_sample(self, run_id: str, sample: Sample) -> None:
        """:meth:`Samples.add_sample`: store one sample and commit it at once."""
        self.samples.add_sample(run_id, sample)

    def add_samples(self, run_id: str, samples: Sequence[Sample]) -> None:
        """:meth:`Samples.add_samples`: store several samples in one commit."""
        self.samples.add_samples(run_id, samples)

    def batch(
        self,
        run_id: str,
        *,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        max_delay: float = DEFAULT_MAX_DELAY,
    ) -> SampleWriter:
        """:meth:`Samples.batch`: a writer that adds samples of ``run_id`` in batches."""
        return self.samples.batch(run_id, max_samples=max_samples, max_delay=max_delay)

    def load_run(self, run_id: str) -> tuple[RunInfo, list[Sample], Mapping[str, Any] | None]:
        """:meth:`Samples.load_run`: a run's info, samples in order, and diagnosis."""
        return self.samples.load_run(run_id)

    def iter_samples(self, run_id: str) -> Iterator[Sample]:
        """:meth:`Samples.iter_samples`: a run's samples, read a few at a time."""
        return self.samples.iter_samples(run_id)

    # -- whole runs in and out (:class:`Exchange`) -------------------------------

    def export_json(self, run_id: str) -> str:
        """:meth:`Exchange.export_json`: the run as one self-describing JSON document."""
        return self.exchange.export_json(run_id)

    def import_json(self, text: str) -> str:
        """:meth:`Exchange.import_json`: add the run in an export document; its id."""
        return self.exchange.import_json(text)

    def import_run(
        self, run: RunInfo, diagnosis: Mapping[str, Any] | None, samples: Iterable[Sample]
    ) -> tuple[str, int]:
        """:meth:`Exchange.import_run`: add a run and its samples in one transaction."""
        return self.exchange.import_run(run, diagnosis, samples)

    # -- summaries of the narrow rows (:class:`Queries`) -------------------------

    def spent(self, run_id: str) -> tuple[int, int, int]:
        """:meth:`Queries.spent`: requests, tokens and next sample index of a run."""
        return self.queries.spent(run_id)

    def prompt_tokens(self, run_id: str, step: Step) -> list[int | None]:
        """:meth:`Queries.prompt_tokens`: the prompt tokens of a run's samples of ``step``."""
        return self.queries.prompt_tokens(run_id, step)

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
        """:meth:`Queries.aggregate`: runs' samples summarised per time bucket."""
        return self.queries.aggregate(
            run_ids, name=name, bucket=bucket, cycle=cycle, offset=offset, steps=steps
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
        """:meth:`Queries.bucket_ttfts`: the TTFTs of runs' samples per time bucket."""
        return self.queries.bucket_ttfts(
            run_ids,
            name=name,
            bucket=bucket,
            cycle=cycle,
            offset=offset,
            steps=steps,
            cold=cold,
            target_prompt_tokens=target_prompt_tokens,
        )
