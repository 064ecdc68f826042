"""``latdoc report``: a stored run shown again, sending nothing, as its kind's entry in
:data:`latdoc.features.report.RUN_KINDS` shows it; ``--watch NAME`` reads a watch by the
clock instead.
"""

from __future__ import annotations

import argparse
from typing import Any

from latdoc.cli import watch
from latdoc.cli._options import (
    EXIT_OK,
    add_html_argument,
    add_json_argument,
    add_lang_argument,
    add_store_argument,
)
from latdoc.cli._output import emit
from latdoc.errors import UsageError
from latdoc.features.report import report_run
from latdoc.i18n import N_
from latdoc.store import Store


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
        emit(report_run(store, args.run_id), args, terminal=False)
    return EXIT_OK
