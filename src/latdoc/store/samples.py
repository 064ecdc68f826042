"""The samples of a store's runs: :class:`Samples`.

Each sample is committed as it is added (:meth:`Samples.add_sample`), so a run that is
interrupted keeps every trace it finished; several can share one commit
(:meth:`Samples.add_samples`), and a busy writer batches its commits
(:meth:`Samples.batch`, a :class:`~latdoc.store.writer.SampleWriter`). A run is read
whole (:meth:`Samples.load_run`) or a few samples at a time
(:meth:`Samples.iter_samples`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from latdoc.records import Sample
from latdoc.store._connection import Connection
from latdoc.store.rows import RUN_COLUMNS, SAMPLE_COLUMNS, run_from_row, sample_from_row
from latdoc.store.run import RunInfo
from latdoc.store.writer import DEFAULT_MAX_DELAY, DEFAULT_MAX_SAMPLES, SampleWriter

READ_BATCH = 1000
"""Rows read at once by :meth:`Samples.iter_samples`."""


class Samples:
    """The samples of one store's connection."""

    def __init__(self, connection: Connection) -> None:
        self._db = connection

    def add_sample(self, run_id: str, sample: Sample) -> None:
        """Store one sample of ``run_id`` and commit it at once."""
        self.add_samples(run_id, (sample,))

    def add_samples(self, run_id: str, samples: Sequence[Sample]) -> None:
        """Store several samples of ``run_id`` in one commit (one disk sync for all)."""
        if not samples:
            return
        with self._db.transaction():
            if not self._db.exists(run_id):
                raise self._db.missing(run_id)
            self._db.insert_samples(run_id, samples)

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
        if not self._db.exists(run_id):
            raise self._db.missing(run_id)
        return SampleWriter(self, run_id, max_samples=max_samples, max_delay=max_delay)

    def load_run(self, run_id: str) -> tuple[RunInfo, list[Sample], Mapping[str, Any] | None]:
        """A run by its id or a unique prefix of it: its info, samples in order, diagnosis."""
        full_id = self._db.resolve(run_id)
        row = self._db.sql.execute(
            f"SELECT {RUN_COLUMNS}, diagnosis FROM runs WHERE run_id = ?", (full_id,)
        ).fetchone()
        samples = self._db.sql.execute(
            f"SELECT {SAMPLE_COLUMNS} FROM samples JOIN sample_traces USING (seq) "
            "WHERE run_id = ? ORDER BY idx, seq",
            (full_id,),
        )
        diagnosis = row[-1]
        return (
            self._db.as_seen(run_from_row(row[:-1])),
            [sample_from_row(r) for r in samples],
            None if diagnosis is None else json.loads(diagnosis),
        )

    def samples_page(self, run_id: str, *, offset: int = 0, limit: int = 100) -> list[Sample]:
        """``limit`` of a run's samples in order, from the ``offset``-th: a page of a run
        of any size."""
        rows = self._db.sql.execute(
            f"SELECT {SAMPLE_COLUMNS} FROM samples JOIN sample_traces USING (seq) "
            "WHERE run_id = ? ORDER BY idx, seq LIMIT ? OFFSET ?",
            (self._db.resolve(run_id), limit, offset),
        )
        return [sample_from_row(r) for r in rows]

    def iter_samples(self, run_id: str) -> Iterator[Sample]:
        """The samples of a run (an id or a unique prefix) in order, read from the file a
        few at a time as they are asked for: any number in bounded memory."""
        cursor = self._db.sql.execute(
            f"SELECT {SAMPLE_COLUMNS} FROM samples JOIN sample_traces USING (seq) "
            "WHERE run_id = ? ORDER BY idx, seq",
            (self._db.resolve(run_id),),
        )
        while rows := cursor.fetchmany(READ_BATCH):
            yield from (sample_from_row(r) for r in rows)
