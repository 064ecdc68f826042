"""The kinds of run the store keeps, one entry each, in one tuple: :data:`RUN_KINDS`.

An entry names the kind as the store keeps it (one of :data:`latdoc.store.RUN_KINDS`,
the only names the store accepts; a unit test checks the two agree), the document a run
of it keeps (the schema its feature's codec writes and reads back; ``None``: none), what
``latdoc report RUN`` shows of a stored run of it, and what its page shows. A report
says only what the command has always said of a run; a page (``latdoc serve``) shows
every kind: a watch by the clock, an arm of an experiment beside its other arm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from latdoc.features.agent import shown_instrumented
from latdoc.features.compare import ShownComparison, compare_runs
from latdoc.features.diagnose import ShownDiagnosis, rediagnose
from latdoc.features.load import LOAD_RECORD_SCHEMA, reload_load
from latdoc.features.watch import DAY_S, HOUR_OF_DAY_TITLE, HOUR_S, watch_clock
from latdoc.model import DIAGNOSIS_SCHEMA
from latdoc.report.shown import Shown
from latdoc.store import (
    DIAGNOSE_KIND,
    INSTRUMENT_KIND,
    LOAD_KIND,
    PROBE_KIND,
    VERIFY_KIND,
    WATCH_KIND,
    RunInfo,
    Store,
)

Report = Callable[[Store, RunInfo], Shown]
Page = Callable[[Store, RunInfo], Shown | None]


def _diagnosis(store: Store, info: RunInfo) -> Shown:
    """Diagnosed again (a diagnosis, or recorded traffic); any other kind is refused by
    :func:`latdoc.features.diagnose.rediagnose` with what shows it instead."""
    return ShownDiagnosis(rediagnose(store, info.run_id))


def _instrumented(store: Store, info: RunInfo) -> Shown:
    """Recorded traffic diagnosed again, led by its agent's run where it kept one."""
    return shown_instrumented(store, info)


def _load(store: Store, info: RunInfo) -> Shown:
    return reload_load(store, info.run_id).shown()


def _watch_page(store: Store, info: RunInfo) -> Shown | None:
    """The watch's day: its requests by the hour of the UTC day."""
    name = info.meta.get("name")
    if not isinstance(name, str):
        return None
    clock = watch_clock(store, name, bucket_s=HOUR_S, cycle_s=DAY_S)
    return clock.shown(f"Watch {name} {HOUR_OF_DAY_TITLE}")


def _experiment_page(store: Store, info: RunInfo) -> Shown | None:
    """An arm of an experiment beside its other arm, A as the baseline, as ``latdoc
    verify`` compared them; ``None`` while the other arm is not in the store."""
    experiment = info.meta.get("experiment")
    if not isinstance(experiment, str):
        return None
    arms = {run.meta.get("arm"): run for run in store.find_runs(VERIFY_KIND, experiment=experiment)}
    a, b = arms.get("A"), arms.get("B")
    if a is None or b is None or not a.requests or not b.requests:
        return None
    names = (str(a.meta.get("arm_label") or "A"), str(b.meta.get("arm_label") or "B"))
    return ShownComparison(compare_runs(store, a.run_id, b.run_id, allow_different=True), names)


def _no_page(store: Store, info: RunInfo) -> None:
    return None


@dataclass(frozen=True)
class RunKind:
    """One kind of stored run: its name, the document it keeps, how it is shown again."""

    name: str
    """The run's ``kind`` in the store."""
    document: str | None
    """The schema of the document a finished run of this kind keeps, if any."""
    report: Report
    """``latdoc report RUN`` of a stored run of this kind: read back, as shown."""
    page: Page
    """What a page of a run of this kind shows; ``None``: its facts alone."""


RUN_KINDS: tuple[RunKind, ...] = (
    RunKind(DIAGNOSE_KIND, DIAGNOSIS_SCHEMA, _diagnosis, _diagnosis),
    RunKind(INSTRUMENT_KIND, None, _instrumented, _instrumented),
    RunKind(LOAD_KIND, LOAD_RECORD_SCHEMA, _load, _load),
    RunKind(PROBE_KIND, None, _diagnosis, _no_page),
    RunKind(VERIFY_KIND, None, _diagnosis, _experiment_page),
    RunKind(WATCH_KIND, None, _diagnosis, _watch_page),
)


def run_kind(name: str) -> RunKind:
    """The entry of the kind the store calls ``name``."""
    for kind in RUN_KINDS:
        if kind.name == name:
            return kind
    raise LookupError(f"run kind {name!r} is not one latdoc knows")


def report_run(store: Store, run_id: str) -> Shown:
    """What ``latdoc report RUN`` shows of the stored run ``run_id`` (or a unique prefix)."""
    info = store.run_info(run_id)
    return run_kind(info.kind).report(store, info)


def page_of(store: Store, info: RunInfo) -> Shown | None:
    """What a page of the stored run ``info`` shows; ``None``: its facts alone."""
    return run_kind(info.kind).page(store, info)
