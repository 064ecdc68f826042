"""What ``latdoc serve`` reads of a store: a page of the runs a listing asks for, what a
run page shows beside the run (the diagnosis that proposed an experiment, the
experiments that followed a diagnosis), and a listing's query read into a filter.

Everything here reads; a store opened by ``latdoc serve`` cannot be written to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.store import DIAGNOSE_KIND, RUN_KINDS, VERIFY_KIND, RunFilter, RunInfo, Store

PAGE_SIZE = 50
"""Runs a listing shows at a time, unless its query asks for another number."""
MAX_PAGE_SIZE = 500
"""The most a listing shows at a time: a page stays quick to read and to draw."""
MAX_ROWS = 1000
"""The most request rows one call of the rows API returns."""


@dataclass(frozen=True)
class ListQuery:
    """A listing as its query asks for it: the filter, where the page starts, its size."""

    chosen: RunFilter
    after: str | None
    limit: int

    def params(self, **changes: str | None) -> dict[str, str]:
        """The query that asks for this listing again, with ``changes`` (``None``
        removes a key): what a link to the next page carries."""
        chosen = self.chosen
        params = {
            "endpoint": chosen.endpoint,
            "kind": chosen.kind,
            "since": None if chosen.since is None else f"{chosen.since:%Y-%m-%d}",
            "until": None if chosen.until is None else f"{chosen.until - _DAY:%Y-%m-%d}",
            "after": self.after,
            "limit": None if self.limit == PAGE_SIZE else str(self.limit),
        }
        params.update(changes)
        return {key: value for key, value in params.items() if value}


_DAY = timedelta(days=1)


def list_query(query: Mapping[str, str]) -> ListQuery:
    """A listing's query (``endpoint``, ``kind``, ``since`` and ``until`` as UTC dates,
    ``until`` included, ``after`` a run id, ``limit``) read, or a :class:`UsageError`
    that says which value is wrong and what it takes."""
    kind = query.get("kind") or None
    if kind is not None and kind not in RUN_KINDS:
        raise UsageError(
            Message("kind {kind!r}: use one of {kinds}", kind=kind,
                    kinds=", ".join(sorted(RUN_KINDS)))
        )  # fmt: skip
    since = _date(query, "since")
    until = _date(query, "until")
    chosen = RunFilter(
        endpoint=query.get("endpoint") or None,
        kind=kind,
        since=since,
        until=None if until is None else until + _DAY,
    )
    return ListQuery(chosen, query.get("after") or None, _limit(query.get("limit")))


def _date(query: Mapping[str, str], key: str) -> datetime | None:
    text = query.get(key)
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise UsageError(
            Message("{key} {text!r}: give a date as YYYY-MM-DD (UTC)", key=key, text=text)
        ) from None


def _limit(text: str | None) -> int:
    if not text:
        return PAGE_SIZE
    try:
        limit = int(text)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise UsageError(
            Message("limit {text!r}: give a whole number from 1 to {most}", text=text,
                    most=MAX_PAGE_SIZE)
        )  # fmt: skip
    return limit


@dataclass(frozen=True)
class RunsPage:
    """One page of a listing: its runs, newest first, what each cost where its document
    says, how many runs the filter picks in all, and the run the next page starts after
    (``None``: this is the last)."""

    query: ListQuery
    runs: tuple[RunInfo, ...]
    costs: Mapping[str, float]
    total: int
    next_after: str | None
    endpoints: tuple[str, ...]


def runs_page(store: Store, query: ListQuery) -> RunsPage:
    """The page of runs ``query`` asks for; one more run is read than is shown, to know
    whether a next page exists."""
    if query.after is not None:
        # A cursor that names no run would silently start at the top: said instead.
        query = ListQuery(query.chosen, store.runs.run_info(query.after).run_id, query.limit)
    runs = store.runs.page_runs(query.chosen, after=query.after, limit=query.limit + 1)
    shown = tuple(runs[: query.limit])
    more = len(runs) > query.limit
    return RunsPage(
        query,
        shown,
        store.runs.costs([run.run_id for run in shown]),
        store.runs.count_runs(query.chosen),
        shown[-1].run_id if more and shown else None,
        tuple(store.runs.endpoints()),
    )


@dataclass(frozen=True)
class Related:
    """Runs a run's page links to: the diagnosis an experiment followed, and the
    experiments that followed a diagnosis."""

    proposed_by: RunInfo | None
    verified_by: tuple[RunInfo, ...]


def related(store: Store, info: RunInfo) -> Related:
    """What ``info``'s page links to. An experiment (``latdoc verify``) is tied to the
    diagnosis that proposed it: the latest diagnosis of the same endpoint and model that
    began before it. A diagnosis lists the experiments tied to it so (arm A of each, the
    experiment's baseline): those of its target that began after it, up to the next
    diagnosis of that target, each read from the store's index, never every run."""
    if info.kind == VERIFY_KIND:
        return Related(_proposer(store, info), ())
    if info.kind != DIAGNOSE_KIND:
        return Related(None, ())
    runs = store.runs
    later = runs.target_runs(DIAGNOSE_KIND, info.endpoint, info.model, after=info.started_at,
                             newest_first=False, limit=1)  # fmt: skip
    # An experiment that began with the next diagnosis may still be this one's: a second
    # more is read, and each is checked exactly.
    until = later[0].started_at + timedelta(seconds=1) if later else None
    experiments = runs.target_runs(VERIFY_KIND, info.endpoint, info.model,
                                   after=info.started_at, before=until)  # fmt: skip
    return Related(
        None,
        tuple(
            run
            for run in experiments
            if run.meta.get("arm") == "A" and _proposer_of(run, store) == info.run_id
        ),
    )


def _proposer(store: Store, info: RunInfo) -> RunInfo | None:
    before = store.runs.target_runs(DIAGNOSE_KIND, info.endpoint, info.model,
                                    before=info.started_at, limit=1)  # fmt: skip
    return before[0] if before else None


def _proposer_of(run: RunInfo, store: Store) -> str | None:
    proposer = _proposer(store, run)
    return None if proposer is None else proposer.run_id


def run_row(info: RunInfo, cost: float | None) -> dict[str, object]:
    """A run as the runs API lists it."""
    return {
        "run_id": info.run_id,
        "kind": info.kind,
        "status": info.status,
        "started_at": info.started_at.isoformat(),
        "finished_at": None if info.finished_at is None else info.finished_at.isoformat(),
        "endpoint": info.endpoint,
        "model": info.model,
        "scenario": info.scenario,
        "verdict": info.verdict,
        "requests": info.requests,
        "failed": info.failed,
        "cost_usd": cost,
    }


def page_rows(page: RunsPage) -> list[dict[str, object]]:
    """A page's runs as the runs API lists them."""
    return [run_row(run, page.costs.get(run.run_id)) for run in page.runs]
