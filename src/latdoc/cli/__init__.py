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
from collections.abc import Callable, Sequence

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
    from latdoc._version import __version__

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


def _report(args: argparse.Namespace) -> int:
    return watch.run_report(args) if args.watch else diagnose.run_report(args)


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "probe": probe.run,
    "diagnose": diagnose.run_diagnose,
    "runs": diagnose.run_runs,
    "report": _report,
    "watch": watch.run,
    "compare": verify.run_compare,
    "verify": verify.run_verify,
    "load": load.run,
    "system": system.run,
    "lab": lab.run_lab,
}
"""Each command's module function: parse has happened, it runs and returns the exit code."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        command = _COMMANDS.get(args.command)
        if command is not None:
            return command(args)
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
