"""``latdoc serve``: the store as a local web app, until Ctrl-C. Sends nothing, writes
nothing: every page reads the store as the measuring commands write it."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from latdoc.cli._lab_extra import require_extra
from latdoc.cli._options import EXIT_OK, add_lang_argument, add_store_argument, local_host
from latdoc.errors import UsageError
from latdoc.i18n import N_, Message, translate

SERVE_PACKAGES = ("starlette", "uvicorn")
"""The ``[serve]`` extra's packages, as they are imported."""
TOKEN_ENV = "LATDOC_SERVE_TOKEN"
"""Where the token is read from unless ``--token`` gives it."""
DEFAULT_PORT = 8765


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "serve",
        help="the store as a local web app: every run, its verdict and plots, live runs",
        description="Serve the store's runs as web pages and JSON until Ctrl-C: the runs "
        "newest first (filter by endpoint, kind and date), each run's page as `latdoc "
        "report --html` draws it, an experiment beside the diagnosis that proposed it, a "
        "watch's day, a load's curves, and a run being written, live. Only this machine "
        "can reach it unless --host says otherwise, and then every request needs the "
        f"token (--token, or ${TOKEN_ENV}). Reads the store; never writes it.",
    )
    add_store_argument(p)
    p.add_argument(
        "--host", default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1, this machine only)",
    )  # fmt: skip
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT,
        help=f"the port to listen on (default {DEFAULT_PORT}; 0: any free port)",
    )  # fmt: skip
    p.add_argument(
        "--token",
        help=f"what every request must carry (default ${TOKEN_ENV}); needed with a --host "
        "other than this machine's",
    )
    add_lang_argument(p)


def run(args: argparse.Namespace) -> int:
    require_extra(
        "latdoc serve", N_("the web app"), SERVE_PACKAGES, "pip install 'llm-latency-doctor[serve]'"
    )
    from latdoc.features.serve import ServeOptions, check_store, serve
    from latdoc.store import default_path

    if not 0 <= args.port <= 65535:
        raise UsageError(Message("--port {port}: give 0 to 65535", port=args.port))
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None and not local_host(args.host):
        raise UsageError(
            Message("--host {host} lets other machines read every run kept here: give "
                    "--token TOKEN (or set {env}), which each request must then carry",
                    host=args.host, env=TOKEN_ENV)
        )  # fmt: skip
    db = str(args.db or default_path())
    check_store(db)
    options = ServeOptions(db, token)

    def ready(address: str) -> None:
        shown = address if token is None else f"{address}?token=…"
        said = Message("Serving {db} at {address} (Ctrl-C stops)", db=db, address=shown)
        print(translate(said), file=sys.stderr, flush=True)

    # uvicorn takes Ctrl-C and SIGTERM itself, and returns once it has stopped.
    serve(options, host=args.host, port=args.port, ready=ready)
    return EXIT_OK
