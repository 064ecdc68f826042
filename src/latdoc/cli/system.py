"""``latdoc system``: the client host as a checklist. Reads the host, judges, renders.

A failing check is information, not an error: the command exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from latdoc.advice.system import checklist
from latdoc.cli._options import EXIT_OK, positive_int
from latdoc.model import DEFAULT_CONCURRENCY
from latdoc.pipeline import read_host
from latdoc.report import make_console, render_system, system_to_dict


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "system",
        help="the client host as a checklist: TCP sysctls, limits, pool size, HTTP/2, TLS",
        description="Check the client host's settings that matter to streaming LLM calls: "
        "TCP slow start after idle, TCP keep-alive, ephemeral ports and open files for N "
        "concurrent streams, the pool size that follows from the cores, HTTP/2, Python "
        "and OpenSSL. Each with its current value, the recommended one, why, and the "
        "command that changes it. Sends nothing.",
    )
    p.add_argument(
        "--concurrency", type=positive_int, default=DEFAULT_CONCURRENCY, metavar="N",
        help=f"concurrent streams you expect in production (default {DEFAULT_CONCURRENCY})",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the checklist as JSON")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    items = checklist(read_host(), args.concurrency)
    if args.json:
        out.write(json.dumps(system_to_dict(items, args.concurrency), indent=2) + "\n")
    else:
        make_console(out).print(render_system(items, args.concurrency))
    return EXIT_OK
