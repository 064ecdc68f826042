"""The ``latdoc`` command: parse, call one library function, render, exit.

A user mistake prints one ``Error: …`` line and exits 2; a failed request prints
one ``Error: …`` line naming the phase and the cause, and the run goes on (exit 1
at the end). A traceback means a bug in latdoc.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from latdoc.cli_common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REQUEST_FAILED,
    EXIT_USAGE,
    endpoint_and_connection,
)
from latdoc.errors import LatdocError, UsageError
from latdoc.probe.dialects import Dialect
from latdoc.probe.trace import RequestTrace
from latdoc.report.progress import ProgressBars
from latdoc.workload.prompts import TokenCalibration

if TYPE_CHECKING:
    from rich.console import RenderableType


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = _non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _add_connection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--api",
        choices=[d.value for d in Dialect],
        default=Dialect.CHAT.value,
        help="API dialect: /chat/completions (default) or /completions",
    )
    g = p.add_argument_group("connection")
    g.add_argument("--http2", action="store_true", help="offer HTTP/2 (ALPN) as well as 1.1")
    g.add_argument("--cacert", metavar="FILE", help="CA certificates to verify the server with")
    g.add_argument(
        "--insecure", "-k", action="store_true", help="do not verify the server's certificate"
    )
    g.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable holding the API key (default: OPENAI_API_KEY)",
    )
    g.add_argument(
        "--timeout",
        type=_positive_float,
        default=300.0,
        metavar="S",
        help="give up on one request after S seconds (default 300)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="latdoc",
        description="Which kind of slow is your LLM API call? Time every phase of a "
        "streaming request and attribute the latency.",
    )
    from latdoc import __version__

    parser.add_argument("--version", action="version", version=f"latdoc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    probe = sub.add_parser(
        "probe",
        help="time every phase of streamed completion requests",
        description="Time DNS, TCP, TLS, send, server wait, first token and every chunk of "
        "streamed requests. With no URL (and no OPENAI_BASE_URL) the built-in simulated "
        "endpoint is started and probed.",
    )
    probe.add_argument("url", nargs="?", help="base URL, e.g. https://api.openai.com/v1")
    probe.add_argument("--model", "-m", help="model name (required for a real endpoint)")
    prompt = probe.add_mutually_exclusive_group()
    prompt.add_argument("--prompt", help="the prompt text")
    prompt.add_argument(
        "--prompt-tokens",
        type=_positive_int,
        metavar="N",
        help="a unique prompt of N tokens as the endpoint counts them (calibrated on usage)",
    )
    probe.add_argument("--max-tokens", type=_positive_int, default=64, metavar="N")
    probe.add_argument("--repeat", "-n", type=_positive_int, default=1, metavar="N")
    reuse = probe.add_mutually_exclusive_group()
    reuse.add_argument(
        "--reuse",
        dest="reuse",
        action="store_true",
        default=True,
        help="reuse one connection for all requests (default)",
    )
    reuse.add_argument(
        "--new-connection-each",
        dest="reuse",
        action="store_false",
        help="open a new connection (DNS, TCP, TLS) for every request",
    )
    probe.add_argument("--json", action="store_true", help="one JSON object per request on stdout")
    probe.add_argument("--seed", type=int, help="seed for generated prompts")
    _add_connection_options(probe)

    from latdoc.cli_diagnose import add_diagnose_parsers

    add_diagnose_parsers(sub, _add_connection_options, _positive_int, _positive_float)

    lab = sub.add_parser("lab", help="the lab: endpoints with known latency")
    lab_sub = lab.add_subparsers(dest="lab_command", required=True, parser_class=_Parser)
    serve = lab_sub.add_parser(
        "serve", help="run the simulated OpenAI-compatible streaming endpoint"
    )
    from latdoc.lab.serve_cli import add_serve_arguments

    add_serve_arguments(serve)
    from latdoc.lab.net_cli import add_net_parser

    add_net_parser(lab_sub)
    from latdoc.lab.engine_cli import add_engine_parser

    add_engine_parser(lab_sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "probe":
            return _cmd_probe(args)
        if args.command in ("diagnose", "runs", "report"):
            return _cmd_diagnose_family(args)
        if args.command == "lab" and args.lab_command == "serve":
            return _cmd_lab_serve(args)
        if args.command == "lab" and args.lab_command == "engine":
            from latdoc.lab.engine_cli import run_engine

            return run_engine(args)
        if args.command == "lab" and args.lab_command == "net":
            from latdoc.lab.net_cli import run_net

            return run_net(args)
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


def _api_key(var: str | None) -> str | None:
    if var is not None:
        value = os.environ.get(var)
        if not value:
            raise UsageError(f"--api-key-env {var}: the variable is not set")
        return value
    return os.environ.get("OPENAI_API_KEY") or None


@contextlib.contextmanager
def _target(args: argparse.Namespace) -> Iterator[tuple[str, str | None, str | None]]:
    """(base URL, model, CA file): the user's endpoint, or the built-in lab started here."""
    url = args.url or os.environ.get("OPENAI_BASE_URL")
    if url:
        yield url, args.model, args.cacert
        return
    from latdoc.lab.process import LabProcess
    from latdoc.lab.sim import LabConfig

    with LabProcess(LabConfig(), tls=True, http2=args.http2) as lab:
        print(f"Probing the built-in simulated endpoint at {lab.base_url}", file=sys.stderr)
        yield lab.base_url, args.model or LabConfig().model, lab.ca_file


def _cmd_probe(args: argparse.Namespace) -> int:
    from latdoc.measure import ProbePlan, run_probe
    from latdoc.report import make_console, trace_to_dict

    api_key = _api_key(args.api_key_env)
    with _target(args) as (url, model, cacert):
        endpoint, connection = endpoint_and_connection(args, url, model, cacert, api_key)
        plan = ProbePlan(
            endpoint=endpoint,
            connection=connection,
            prompt=args.prompt,
            prompt_tokens=args.prompt_tokens,
            max_tokens=args.max_tokens,
            repeat=args.repeat,
            reuse_connections=args.reuse,
            seed=args.seed,
        )
        out = sys.stdout
        progress = ProgressBars(sys.stderr, enabled=args.repeat > 1)

        def on_trace(index: int, trace: RequestTrace) -> None:
            if trace.error is not None:
                progress.message(f"Error: request {index + 1}/{args.repeat}: {trace.error}")
            if args.json:
                out.write(json.dumps(trace_to_dict(trace)) + "\n")
                out.flush()
            progress("requests", index + 1, args.repeat)

        try:
            run = asyncio.run(run_probe(plan, on_trace))
        finally:
            progress.clear()
    if not args.json and run.traces:
        make_console(out).print(_render_probe(run.traces, run.calibration))
    return EXIT_REQUEST_FAILED if any(t.error is not None for t in run.traces) else EXIT_OK


def _render_probe(
    traces: Sequence[RequestTrace], calibration: TokenCalibration | None
) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    from latdoc.analysis.repeats import summarize
    from latdoc.report import render_summary, render_waterfall

    parts: list[RenderableType] = [render_waterfall(traces[0])]
    if calibration is not None:
        how = (
            "calibrated on the endpoint's usage"
            if calibration.measured
            else "the endpoint reports no usage, so 1 token per word was assumed"
        )
        parts.append(
            Text(
                f"  Prompt length {how}: {calibration.overhead:.0f} + "
                f"{calibration.per_word:.2f} tokens per word."
            )
        )
    if len(traces) > 1:
        parts += [Text(""), render_summary(summarize(traces))]
    return Group(*parts)


def _cmd_diagnose_family(args: argparse.Namespace) -> int:
    from latdoc import cli_diagnose

    if args.command == "runs":
        return cli_diagnose.cmd_runs(args)
    if args.command == "report":
        return cli_diagnose.cmd_report(args)
    api_key = _api_key(args.api_key_env)
    url = args.url or os.environ.get("OPENAI_BASE_URL")
    if url:
        target: contextlib.AbstractContextManager[tuple[str, str | None, str | None]]
        target = contextlib.nullcontext((url, args.model, args.cacert))
    else:
        target = cli_diagnose.builtin_target(args.http2, sys.stderr)
    return cli_diagnose.cmd_diagnose(args, api_key, target)


def _cmd_lab_serve(args: argparse.Namespace) -> int:
    from latdoc.lab.serve_cli import config_from_args
    from latdoc.lab.server import serve_forever

    config = config_from_args(args)
    serve_forever(
        config,
        host=args.host,
        port=args.port,
        tls=args.tls,
        http2=args.http2,
        tls_names=args.tls_names,
    )
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
