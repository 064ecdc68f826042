"""The ``latdoc`` command: parse, call one library function, render, exit.

One module per command family (``probe``, ``diagnose`` with ``runs`` and
``report``, ``verify`` with ``compare``, ``load``, ``watch`` with ``report --watch``,
``system``, ``lab``); what they parse alike is
in ``_options``. A user mistake prints one ``Error: …`` line and exits 2; a failed
request prints one ``Error: …`` line naming the phase and the cause, and the run goes
on (exit 1 at the end). A traceback means a bug in latdoc.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from latdoc.cli import diagnose, lab, load, probe, system, verify, watch
from latdoc.cli._options import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REQUEST_FAILED,
    EXIT_USAGE,
    Parser,
)
from latdoc.errors import LatdocError, UsageError

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REQUEST_FAILED",
    "EXIT_USAGE",
    "build_parser",
    "main",
]


def build_parser() -> argparse.ArgumentParser:
    from latdoc import __version__

    parser = Parser(
        prog="latdoc",
        description="Which kind of slow is your LLM API call? Time every phase of a "
        "streaming request and attribute the latency.",
    )
    parser.add_argument("--version", action="version", version=f"latdoc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    probe.add_parser(sub)
    diagnose.add_parsers(sub)
    verify.add_parsers(sub)
    load.add_parser(sub)
    watch.add_parser(sub)
    system.add_parser(sub)
    lab.add_lab_parser(sub, Parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "probe":
            return probe.run(args)
        if args.command == "diagnose":
            return diagnose.run_diagnose(args)
        if args.command == "runs":
            return diagnose.run_runs(args)
        if args.command == "report":
            if args.watch:
                return watch.run_report(args)
            return diagnose.run_report(args)
        if args.command == "watch":
            return watch.run(args)
        if args.command == "compare":
            return verify.run_compare(args)
        if args.command == "verify":
            return verify.run_verify(args)
        if args.command == "load":
            return load.run(args)
        if args.command == "system":
            return system.run(args)
        if args.command == "lab":
            return lab.run_lab(args)
        raise UsageError(f"unknown command {args.command!r}")
    except UsageError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LatdocError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_REQUEST_FAILED
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return EXIT_INTERRUPTED
