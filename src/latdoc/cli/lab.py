"""``latdoc lab``: the lab's commands (serve, net, engine)."""

from __future__ import annotations

import argparse
from typing import Any

from latdoc.cli._options import EXIT_OK


def add_lab_parser(sub: argparse._SubParsersAction[Any], parser_class: type[Any]) -> None:
    lab = sub.add_parser("lab", help="the lab: endpoints with known latency")
    lab_sub = lab.add_subparsers(dest="lab_command", required=True, parser_class=parser_class)
    serve = lab_sub.add_parser(
        "serve", help="run the simulated OpenAI-compatible streaming endpoint"
    )
    from latdoc.lab.serve_cli import add_serve_arguments

    add_serve_arguments(serve)
    from latdoc.lab.net_cli import add_net_parser

    add_net_parser(lab_sub)
    from latdoc.lab.engine_cli import add_engine_parser

    add_engine_parser(lab_sub)


def run_lab(args: argparse.Namespace) -> int:
    if args.lab_command == "engine":
        from latdoc.lab.engine_cli import run_engine

        return run_engine(args)
    if args.lab_command == "net":
        from latdoc.lab.net_cli import run_net

        return run_net(args)
    from latdoc.lab.serve_cli import config_from_args
    from latdoc.lab.server import serve_forever

    serve_forever(
        config_from_args(args),
        host=args.host,
        port=args.port,
        tls=args.tls,
        http2=args.http2,
        tls_names=args.tls_names,
    )
    return EXIT_OK
