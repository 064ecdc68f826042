"""``latdoc system``: the client host as a checklist. Reads the host, judges, renders.

A failing check is information, not an error: the command exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO
from urllib.parse import urlsplit

from latdoc.advice.system import ProxyRouteFact, checklist, proxy_items
from latdoc.cli._options import BASE_URL_VARIABLE, EXIT_OK, positive_int
from latdoc.errors import UsageError
from latdoc.model import DEFAULT_CONCURRENCY
from latdoc.pipeline import read_host
from latdoc.probe import ProxyConfig, providers
from latdoc.report import make_console, render_system, system_to_dict


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
    p.add_argument(
        "--concurrency", type=positive_int, default=DEFAULT_CONCURRENCY, metavar="N",
        help=f"concurrent streams you expect in production (default {DEFAULT_CONCURRENCY})",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the checklist as JSON")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    items = checklist(read_host(), args.concurrency) + proxy_items(
        proxy_routes(args.urls or default_urls())
    )
    if args.json:
        out.write(json.dumps(system_to_dict(items, args.concurrency), indent=2) + "\n")
    else:
        make_console(out).print(render_system(items, args.concurrency))
    return EXIT_OK


def default_urls() -> list[str]:
    """``$OPENAI_BASE_URL`` and every preset's base URL that names its host."""
    urls = [os.environ.get(BASE_URL_VARIABLE) or ""]
    urls += [p.base_url for p in providers.PROVIDERS]
    return [
        u
        for u in dict.fromkeys(urls)
        if u.startswith(("http://", "https://"))
        and urlsplit(u).netloc
        and urlsplit(u).netloc == urlsplit(u).netloc.lower()  # no LOCATION, no $VAR
        and "$" not in u
    ]


def proxy_routes(urls: list[str]) -> list[ProxyRouteFact]:
    """Each URL's route through the environment's proxy variables, hosts of one route
    together, in the order first met."""
    config = ProxyConfig()
    grouped: dict[tuple[str, bool, str | None], list[str]] = {}
    for url in urls:
        host = urlsplit(url).hostname or url
        key: tuple[str, bool, str | None]
        try:
            route = config.route(url)
        except UsageError as exc:
            key = ("", False, str(exc))
        else:
            key = (route.shown, route.proxy is not None, None)
        grouped.setdefault(key, [])
        if host not in grouped[key]:
            grouped[key].append(host)
    return [
        ProxyRouteFact(tuple(hosts), shown or (problem or ""), proxied, problem)
        for (shown, proxied, problem), hosts in grouped.items()
    ]
