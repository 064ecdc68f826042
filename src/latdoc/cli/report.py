"""``latdoc report``: a stored run shown again, sending nothing; and the kinds of run the
store keeps, one entry each, in one tuple: :data:`RUN_KINDS`.

An entry names the kind as the store keeps it (one of :data:`latdoc.store.RUN_KINDS`,
the only names the store accepts; a unit test checks the two agree), the document a run
of it keeps (the schema its feature's codec writes and reads back; ``None``: none), and
how ``latdoc report RUN`` shows a stored run of it again. ``latdoc report`` looks the
run's kind up here instead of asking which kind it is; ``--watch NAME`` reads a watch
by the clock instead.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from latdoc.cli import load, watch
from latdoc.cli._options import (
    EXIT_OK,
    add_html_argument,
    add_json_argument,
    add_lang_argument,
    add_store_argument,
)
from latdoc.cli._output import emit
from latdoc.errors import UsageError
from latdoc.features.diagnose import ShownDiagnosis, rediagnose
from latdoc.features.load import LOAD_RECORD_SCHEMA
from latdoc.i18n import N_
from latdoc.model import DIAGNOSIS_SCHEMA
from latdoc.store import (
    DIAGNOSE_KIND,
    INSTRUMENT_KIND,
    LOAD_KIND,
    PROBE_KIND,
    VERIFY_KIND,
    WATCH_KIND,
    Store,
)

Report = Callable[[argparse.Namespace, Store], int]


@dataclass(frozen=True)
class RunKind:
    """One kind of stored run: its name, the document it keeps, how it is shown again."""

    name: str
    """The run's ``kind`` in the store."""
    document: str | None
    """The schema of the document a finished run of this kind keeps, if any."""
    report: Report
    """``latdoc report RUN`` of a stored run of this kind: reads it back, prints it."""


def _diagnosis(args: argparse.Namespace, store: Store) -> int:
    """Diagnosed again (a diagnosis, or recorded traffic); any other kind is refused by
    :func:`latdoc.features.diagnose.rediagnose` with what shows it instead."""
    emit(ShownDiagnosis(rediagnose(store, args.run_id)), args, terminal=False)
    return EXIT_OK


RUN_KINDS: tuple[RunKind, ...] = (
    RunKind(DIAGNOSE_KIND, DIAGNOSIS_SCHEMA, _diagnosis),
    RunKind(INSTRUMENT_KIND, None, _diagnosis),
    RunKind(LOAD_KIND, LOAD_RECORD_SCHEMA, load.run_report),
    RunKind(PROBE_KIND, None, _diagnosis),
    RunKind(VERIFY_KIND, None, _diagnosis),
    RunKind(WATCH_KIND, None, _diagnosis),
)


def run_kind(name: str) -> RunKind:
    """The entry of the kind the store calls ``name``."""
    for kind in RUN_KINDS:
        if kind.name == name:
            return kind
    raise LookupError(f"run kind {name!r} is not one latdoc knows")


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    report = sub.add_parser("report", help="re-render a stored run without sending anything")
    report.add_argument(
        "run_id", nargs="?", help="a run id (or a unique prefix) from `latdoc runs`"
    )
    out = report.add_mutually_exclusive_group()
    add_html_argument(out)
    add_json_argument(out)
    add_lang_argument(report)
    add_store_argument(report)
    watch.add_report_arguments(report)


def run(args: argparse.Namespace) -> int:
    if args.watch:
        return watch.run_report(args)
    if not args.run_id:
        raise UsageError(N_("give a run id from `latdoc runs`, or --watch NAME"))
    with Store(args.db) as store:
        return run_kind(store.run_info(args.run_id).kind).report(args, store)
