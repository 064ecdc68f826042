"""What reports ask of a store's narrow sample rows, without decoding a trace record:
:class:`Queries`.

Per-bucket summaries (:meth:`Queries.aggregate`) and TTFTs (:meth:`Queries.bucket_ttfts`)
of one or more runs, for ``latdoc watch`` and its reports (computed in
:mod:`latdoc.store.aggregate`); what a run has spent of its budget
(:meth:`Queries.spent`); the prompt lengths its samples were counted at
(:meth:`Queries.prompt_tokens`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import numpy as np
import numpy.typing as npt

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.records import Step
from latdoc.store._connection import Connection
from latdoc.store.aggregate import BucketStats, aggregate_samples, bucket_ttfts


class Queries:
    """Summaries read from the narrow rows of one store's connection."""

    def __init__(self, connection: Connection) -> None:
        self._db = connection

    def spent(self, run_id: str) -> tuple[int, int, int]:
        """What a run has sent: requests, prompt + output tokens as counted, next sample index."""
        requests, prompt, output, last = self._db.sql.execute(
            "SELECT count(*), coalesce(sum(prompt_tokens), 0), "
            "coalesce(sum(output_tokens), 0), max(idx) "
            "FROM samples WHERE run_id = ?",
            (self._db.resolve(run_id),),
        ).fetchone()
        return requests, prompt + output, 0 if last is None else last + 1

    def prompt_tokens(self, run_id: str, step: Step) -> list[int | None]:
        """The prompt tokens each of a run's samples of ``step`` was counted at, in order,
        from the narrow rows (no trace is decoded)."""
        rows = self._db.sql.execute(
            "SELECT prompt_tokens FROM samples WHERE run_id = ? AND step = ? ORDER BY idx, seq",
            (self._db.resolve(run_id), step.value),
        )
        return [row[0] for row in rows]

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
            self._db.sql,
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
            self._db.sql,
            self._run_ids(run_ids, name),
            bucket=bucket,
            cycle=cycle,
            offset=offset,
            steps=steps,
            cold=cold,
            target_prompt_tokens=target_prompt_tokens,
        )

    def _run_ids(self, run_ids: str | Sequence[str], name: str | None) -> list[str]:
        wanted = [run_ids] if isinstance(run_ids, str) else list(run_ids)
        full_ids = {self._db.resolve(r) for r in wanted}
        if name is not None:
            named = self._db.sql.execute(
                "SELECT run_id FROM runs WHERE json_extract(meta, '$.name') = ?", (name,)
            ).fetchall()
            if not named:
                raise UsageError(
                    Message("no run named {name!r} in {path}", name=name, path=self._db.path)
                )
            full_ids.update(row[0] for row in named)
        if not full_ids:
            raise UsageError(N_("name the runs to aggregate: run ids or a name"))
        return sorted(full_ids)
