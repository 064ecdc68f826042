"""``latdoc system``: the client host as a checklist (:mod:`latdoc.features.system`),
printed as a table or JSON.

A failing check is information, not an error: the command exits 0.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from latdoc.cli._options import (
    BASE_URL_VARIABLE,
    EXIT_OK,
    add_concurrency_argument,
    add_json_argument,
)
from latdoc.cli._output import emit
from latdoc.features.system import check_system
from latdoc.report import ShownSystem


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "system",
        help="the client host as a checklist: TCP sysctls, limits, pool size, HTTP/2, TLS, proxies",
        description="Check the client host's settings that matter to streaming LLM calls: "
        "TCP slow start after idle, TCP keep-alive, ephemeral ports and open files for N "
        "concurrent streams, the pool size that follows from the cores, HTTP/2, Python "
        "and OpenSSL, and which proxy each API URL would go through (HTTPS_PROXY, "
        "ALL_PROXY, NO_PROXY, as httpx and curl read them). Each with its current value, "
        "the recommended one, why, and the command that changes it. Sends nothing.",
    )
    p.add_argument(
        "urls", nargs="*", metavar="URL",
        help=f"API URLs to show the proxy of (default: ${BASE_URL_VARIABLE} and the "
        "--provider presets' URLs)",
    )  # fmt: skip
    add_concurrency_argument(p, "concurrent streams you expect in production")
    add_json_argument(p, "print the checklist as JSON")


def run(args: argparse.Namespace) -> int:
    items = check_system(
        args.urls, concurrency=args.concurrency, base_url=os.environ.get(BASE_URL_VARIABLE)
    )
    emit(ShownSystem(items, args.concurrency), args)
    return EXIT_OK
