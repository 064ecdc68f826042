"""``latdoc probe``: time every phase of streamed requests and show the waterfall."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from latdoc.cli._options import (
    EXIT_OK,
    EXIT_REQUEST_FAILED,
    add_json_argument,
    add_output_tokens_argument,
    add_prompt_tokens_argument,
    add_seed_argument,
    add_store_argument,
    add_target_arguments,
    add_vantage_arguments,
    positive_int,
    vantages,
)
from latdoc.cli._output import emit
from latdoc.cli._sending import Sending
from latdoc.features.probe import probe_endpoint, render_probe
from latdoc.features.vantage import probe_vantages
from latdoc.records import RequestTrace
from latdoc.report import ProgressBars, make_console, trace_to_dict
from latdoc.workload import ProbePlan


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    probe = sub.add_parser(
        "probe",
        help="time every phase of streamed completion requests",
        description="Time DNS, TCP, TLS, send, server wait, first token and every chunk of "
        "streamed requests. With no URL (no --provider, no OPENAI_BASE_URL) the built-in "
        "simulated endpoint is started and probed.",
    )
    add_target_arguments(probe)
    prompt = probe.add_mutually_exclusive_group()
    prompt.add_argument("--prompt", help="the prompt text")
    add_prompt_tokens_argument(
        prompt, "a unique prompt of N tokens as the endpoint counts them (calibrated on usage)"
    )
    add_output_tokens_argument(probe, ProbePlan)
    probe.add_argument("--repeat", "-n", type=positive_int, default=1, metavar="N")
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
    add_json_argument(probe, "one JSON object per request on stdout")
    add_seed_argument(probe, "generated prompts")
    add_vantage_arguments(probe, "the probes")
    add_store_argument(probe)


def run(args: argparse.Namespace) -> int:
    sending = Sending.of(args)
    err, out = sys.stderr, sys.stdout
    places = vantages(args)
    with sending.to(err, engine=False) as (endpoint, connection):
        plan = sending.plan(
            ProbePlan,
            endpoint,
            connection,
            prompt=args.prompt,
            prompt_tokens=args.prompt_tokens,
            repeat=args.repeat,
            reuse_connections=args.reuse,
        )
        progress = ProgressBars(err, enabled=args.repeat > 1, transient=True)

        def on_trace(index: int, trace: RequestTrace) -> None:
            if trace.error is not None:
                progress.message(f"Error: request {index + 1}/{args.repeat}: {trace.error}")
            if args.json:
                out.write(json.dumps(trace_to_dict(trace)) + "\n")
                out.flush()
            progress("requests", index + 1, args.repeat)

        with sending.store() as store, progress:
            if places is not None:
                runs = probe_vantages(plan, ray=args.ray, vantages=places, store=store)
                emit(runs.shown(), args)
                return EXIT_REQUEST_FAILED if runs.every_failed else EXIT_OK
            stored = probe_endpoint(plan, store=store, on_trace=on_trace)
    result = stored.result
    if not args.json and result.traces:
        make_console(out).print(render_probe(result))
    print(
        f"Run {stored.run_id}: {len(result.traces)} traces kept in {stored.store_path}; "
        f"`latdoc compare {stored.run_id} OTHER_RUN` compares it with another run.",
        file=err,
    )
    return EXIT_REQUEST_FAILED if stored.any_failed else EXIT_OK
