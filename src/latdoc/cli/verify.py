"""``latdoc compare`` and ``latdoc verify``: prove a remedy by measurement."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from latdoc.cli._options import EXIT_OK
from latdoc.errors import UsageError
from latdoc.pipeline import RunComparison, compare_runs
from latdoc.store import RunInfo, Store


def add_parsers(sub: argparse._SubParsersAction[Any]) -> None:
    compare = sub.add_parser(
        "compare",
        help="compare two stored runs: medians, intervals, significance",
        description="Compare two stored runs (probe, diagnose, or the arms of a verify) like "
        "with like: the same step, prompt length and concurrency. Per metric: both medians, "
        "the difference and the ratio with 95%% bootstrap intervals, and a Mann–Whitney "
        "p-value adjusted for the number of tests. Sends nothing.",
    )
    compare.add_argument("run_a", help="run id (or unique prefix) of A, e.g. before the change")
    compare.add_argument("run_b", help="run id (or unique prefix) of B, e.g. after the change")
    compare.add_argument(
        "--allow-different",
        action="store_true",
        help="compare runs of different endpoints or models",
    )
    out = compare.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the comparison as JSON")
    out.add_argument("--html", metavar="FILE", help="write the comparison as an HTML page")
    compare.add_argument("--db", metavar="FILE", help="the SQLite store (default: user data dir)")


def run_compare(args: argparse.Namespace) -> int:
    with Store(args.db) as store:
        result = compare_runs(store, args.run_a, args.run_b, allow_different=args.allow_different)
    emit_comparison(result, args, names=("A", "B"))
    return EXIT_OK


def describe(info: RunInfo) -> str:
    """One line that says what a run was."""
    what = info.meta.get("arm_label") if isinstance(info.meta, dict) else None
    label = f"{what}; " if what else ""
    return (
        f"{label}{info.kind} run {info.run_id} of {info.model} at {info.endpoint}, "
        f"{info.started_at:%Y-%m-%d %H:%M} UTC, {info.requests} requests"
    )


def run_dict(info: RunInfo) -> dict[str, Any]:
    return {
        "run_id": info.run_id,
        "kind": info.kind,
        "endpoint": info.endpoint,
        "model": info.model,
        "started_at": info.started_at.isoformat(),
        "requests": info.requests,
        "failed": info.failed,
        "label": info.meta.get("arm_label") if isinstance(info.meta, dict) else None,
    }


def emit_comparison(
    result: RunComparison, args: argparse.Namespace, names: tuple[str, str]
) -> None:
    from latdoc.report import comparison_to_dict, make_console, render_comparison

    document = comparison_to_dict(
        result.comparison, a=run_dict(result.a), b=run_dict(result.b), names=names
    )
    if args.json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    if args.html:
        from latdoc.report import render_comparison_html

        path = Path(args.html)
        try:
            path.write_text(
                render_comparison_html(
                    result.comparison, a_label=describe(result.a), b_label=describe(result.b)
                ),
                encoding="utf-8",
            )
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None
        print(f"HTML comparison written to {path}", file=sys.stderr)
    make_console(sys.stdout).print(
        render_comparison(
            result.comparison,
            a_label=describe(result.a),
            b_label=describe(result.b),
            names=names,
        )
    )
