"""``latdoc record``: a local gateway in front of the provider; every call an application
makes through it is timed phase by phase and kept as a run to diagnose."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from latdoc.cli._options import (
    EXIT_OK,
    add_lang_argument,
    add_store_argument,
    duration,
    local_host,
    positive_int,
)
from latdoc.errors import UsageError
from latdoc.i18n import N_, Message, translate

TOKEN_ENV = "LATDOC_RECORD_TOKEN"
"""Where the token is read from unless ``--token`` gives it."""
DEFAULT_LISTEN = "127.0.0.1:8787"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "record",
        help="a local gateway that times every call an application makes through it",
        description="Listen on --listen and pass every request on to --upstream unchanged "
        "(its key, its body, the answer streamed back as it arrives), timing each call to "
        "the upstream phase by phase (DNS, TCP, TLS, the send, the server's wait, every "
        "chunk, connection reuse) and keeping it as a run: point any application at it "
        "(OPENAI_BASE_URL, ANTHROPIC_BASE_URL, a gateway setting) and diagnose what it "
        "recorded with `latdoc diagnose --from-run RUN`. Runs until --max-requests, "
        "--duration or Ctrl-C; every finished call is kept. The key is never stored.",
    )
    p.add_argument(
        "--upstream", required=True, metavar="URL",
        help="the provider's base URL the calls go on to, e.g. https://api.openai.com/v1",
    )  # fmt: skip
    p.add_argument(
        "--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
        help=f"where the gateway listens (default {DEFAULT_LISTEN}, this machine only; "
        "port 0: any free port)",
    )  # fmt: skip
    p.add_argument("--name", help="a name for the recording, shown with the run")
    p.add_argument(
        "--max-requests", type=positive_int, metavar="N",
        help="stop once N calls have finished",
    )  # fmt: skip
    p.add_argument(
        "--duration", type=duration, metavar="DURATION",
        help="stop after this long, e.g. 30s, 10m, 2h",
    )  # fmt: skip
    p.add_argument(
        "--token",
        help=f"what every call must carry in X-Latdoc-Token (default ${TOKEN_ENV}); needed "
        "with a --listen address other than this machine's",
    )
    p.add_argument(
        "--cacert", metavar="FILE",
        help="CA certificates to verify the upstream with, beside the system's",
    )  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="no line per call, only the summary")
    add_store_argument(p)
    add_lang_argument(p)


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(
            Message("--listen {listen}: give HOST:PORT, such as 127.0.0.1:8787", listen=text)
        )
    return host.strip("[]"), int(port)


def run(args: argparse.Namespace) -> int:
    from latdoc.cli._lab_extra import require_extra

    require_extra(
        "latdoc record", N_("the gateway"), ("starlette", "uvicorn"),
        "pip install 'llm-latency-doctor[serve]'",
    )  # fmt: skip
    from latdoc.features.record import (
        RecordPlan,
        call_line,
        closing_lines,
        parse_upstream,
        record_traffic,
    )
    from latdoc.records import RequestTrace

    upstream = parse_upstream(args.upstream)
    host, port = _host_port(args.listen)
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None and not local_host(host):
        raise UsageError(
            Message("--listen {host} lets other machines send through this gateway: give "
                    "--token TOKEN (or set {env}), which each call must then carry in "
                    "X-Latdoc-Token", host=host, env=TOKEN_ENV)
        )  # fmt: skip
    plan = RecordPlan(
        upstream=upstream, host=host, port=port, name=args.name,
        max_requests=args.max_requests, duration_s=args.duration, token=token,
        db=str(args.db) if args.db else None, cacert=args.cacert,
    )  # fmt: skip
    count = 0

    def ready(address: str) -> None:
        said = Message(
            "Recording at {address}: point the application's base URL here "
            "(Ctrl-C stops)", address=address,
        )  # fmt: skip
        print(translate(said), file=sys.stderr, flush=True)

    def each(trace: RequestTrace) -> None:
        nonlocal count
        count += 1
        if not args.quiet:
            print(call_line(count, trace), file=sys.stderr, flush=True)

    recorded = record_traffic(plan, ready=ready, on_trace=each)
    for line in closing_lines(recorded):
        print(line, file=sys.stderr)
    print(recorded.run_id)
    return EXIT_OK
