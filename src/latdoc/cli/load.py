"""``latdoc load``: sweep concurrency or arrival rate, and show latency and throughput by level."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from latdoc.analysis import quantities
from latdoc.analysis.gates import parse_gates
from latdoc.cli._options import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REQUEST_FAILED,
    add_budget_arguments,
    add_gate_argument,
    add_html_argument,
    add_json_argument,
    add_metrics_arguments,
    add_output_tokens_argument,
    add_prompt_tokens_argument,
    add_ray_argument,
    add_seed_argument,
    add_store_argument,
    add_target_arguments,
    add_trace_arguments,
    add_yes_argument,
    argument_type,
    duration,
    plan_default,
    positive_float,
    positive_int,
    serving_metrics,
)
from latdoc.cli._output import emit
from latdoc.cli._sending import Sending
from latdoc.features.load import (
    DEFAULT_CONCURRENCY,
    DEFAULT_LIMIT,
    DEFAULT_RAY_WORKERS,
    FindMaxAsk,
    LoadPlan,
    Replay,
    Workers,
    load_endpoint,
    parse_levels,
    parse_rates,
    parse_slo,
)
from latdoc.report import ProgressBars

DEFAULT_DURATION_S = plan_default(LoadPlan, "duration_per_level")
DEFAULT_MAX_REQUESTS = plan_default(LoadPlan, "max_requests")
DEFAULT_MAX_SECONDS = plan_default(LoadPlan, "max_seconds")
DEFAULT_PROMPT_TOKENS = plan_default(LoadPlan, "prompt_tokens")
DEFAULT_MAX_IN_FLIGHT = plan_default(LoadPlan, "max_in_flight")
DEFAULT_MAX_ERROR_RATE = plan_default(LoadPlan, "max_error_rate")


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "load",
        help="latency and throughput against load: the knee, the plateau, goodput",
        description="Send at growing load, level by level: closed loop (--concurrency, N "
        "streams back to back) or open loop (--rate, Poisson arrivals). Shows TTFT, TPOT and "
        "end-to-end percentiles, requests and tokens per second, errors and the client's own "
        "pool wait per level; finds the saturation knee and the throughput plateau, checks "
        "Little's law, and counts goodput against --slo. With no URL (no --provider, no "
        "OPENAI_BASE_URL) the built-in simulated endpoint is loaded.",
    )
    add_target_arguments(p)
    levels = p.add_mutually_exclusive_group()
    levels.add_argument(
        "--concurrency", type=argument_type(parse_levels), metavar="N,N,...",
        help="closed-loop levels: streams sending back to back "
        f"(default {','.join(str(n) for n in DEFAULT_CONCURRENCY)})",
    )  # fmt: skip
    levels.add_argument(
        "--rate", type=argument_type(parse_rates), metavar="R,R,...",
        help="open-loop levels: Poisson arrivals, requests per second",
    )  # fmt: skip
    p.add_argument(
        "--duration-per-level", type=duration, default=DEFAULT_DURATION_S, metavar="DURATION",
        help=f"how long each level sends (10s, 2m; a bare number is seconds; "
        f"default {DEFAULT_DURATION_S:g}s)",
    )  # fmt: skip
    add_prompt_tokens_argument(
        p,
        f"prompt length, in words of about a token (default {DEFAULT_PROMPT_TOKENS})",
        DEFAULT_PROMPT_TOKENS,
    )
    add_output_tokens_argument(p, LoadPlan)
    g = add_budget_arguments(p, max_requests=DEFAULT_MAX_REQUESTS, max_seconds=DEFAULT_MAX_SECONDS)
    g.add_argument(
        "--max-error-rate", type=argument_type(quantities.share), default=DEFAULT_MAX_ERROR_RATE,
        metavar="SHARE",
        help="stop the sweep when a level's failed share passes this "
        f"(default {DEFAULT_MAX_ERROR_RATE:g})",
    )  # fmt: skip
    g.add_argument(
        "--max-in-flight", type=positive_int, default=DEFAULT_MAX_IN_FLIGHT, metavar="N",
        help=f"open loop: requests open at once, at most (default {DEFAULT_MAX_IN_FLIGHT})",
    )  # fmt: skip
    g.add_argument(
        "--burst-start", action="store_true",
        help="closed loop: every stream sends its first request at the level's start (by "
        "default their first sends are spread over one mean request time)",
    )  # fmt: skip
    _add_goal_arguments(p)
    _add_worker_arguments(p)
    add_html_argument(p, "write a self-contained HTML report")
    add_json_argument(p, "print the sweep as JSON")
    add_seed_argument(p, "prompts and arrival times")
    add_trace_arguments(p, "replaying a trace", "the levels")
    p.add_argument(
        "--baseline",
        metavar="RUN_ID",
        help="a stored load run to hold this one against with --fail-if (the same levels "
        "are compared with each other)",
    )
    add_gate_argument(p, "--baseline")
    add_metrics_arguments(p, "loading")
    add_store_argument(p)


def _add_goal_arguments(p: argparse.ArgumentParser) -> None:
    """``--slo``, ``--find-max`` and how far it may go."""
    p.add_argument(
        "--slo", type=argument_type(parse_slo), metavar="ttft=2s,tpot=100ms",
        help="objectives a request must meet to count as goodput (a conversation's or an "
        "agent's user turn, with --trace); with --find-max, quantiles each level must meet "
        "(ttft_p95=2s,tpot_p50=80ms)",
    )  # fmt: skip
    p.add_argument(
        "--slo-from", choices=("due", "send"), default="due",
        help="judge --slo's TTFT from when each request was due (default: what a user "
        "behind the generator waits, its own queue in it) or from its send (what the "
        "server did)",
    )  # fmt: skip
    p.add_argument(
        "--find-max", action="store_true",
        help="find the most streams (or, with --rate R, the highest rate from R) that meet "
        "--slo's quantiles: double until a level fails, then bisect; each level runs until "
        "its intervals decide; with --trace of sessions, judged on the user's turns",
    )  # fmt: skip
    p.add_argument(
        "--find-max-limit", type=positive_float, metavar="N",
        help=f"the most streams --find-max grows to (default {DEFAULT_LIMIT}), or with "
        "--rate the highest rate (default 1024 × the starting rate)",
    )  # fmt: skip
    add_yes_argument(p, "allow more than 64 streams against an endpoint that is not on this host")


def _add_worker_arguments(p: argparse.ArgumentParser) -> None:
    """Where the streams are sent from: worker processes or Ray actors."""
    w = p.add_argument_group("workers: when one process cannot keep the streams up")
    spread = w.add_mutually_exclusive_group()
    spread.add_argument(
        "--processes", type=_processes, metavar="N",
        help="send from N local worker processes, each with its share of every level; "
        "auto: as many as a short calibration from this process says the busiest level "
        "needs (at most this machine's cores)",
    )  # fmt: skip
    add_ray_argument(spread, "send from Ray actors on the cluster at ADDRESS")
    w.add_argument(
        "--workers", type=positive_int, metavar="N",
        help=f"with --ray: how many actors (default: {DEFAULT_RAY_WORKERS})",
    )  # fmt: skip


def _processes(text: str) -> int | str:
    """``--processes``: a count, or ``auto``."""
    return "auto" if text.strip().lower() == "auto" else positive_int(text)


def run(args: argparse.Namespace) -> int:
    sending = Sending.of(args)
    processes = args.processes if isinstance(args.processes, int) else None
    spread = Workers.asked(processes, args.ray, args.workers)
    err = sys.stderr
    gates = parse_gates(args.fail_if) if args.fail_if else ()
    slo, objectives = args.slo or (None, ())
    if slo is not None and args.slo_from == "send":
        slo = replace(slo, from_send=True)
    found = FindMaxAsk.asked(args.find_max, objectives, args.find_max_limit, args.rate or ())
    replay = None
    if args.trace is not None:
        streams = (args.concurrency or (1,))[0]
        replay = Replay(args.trace, args.trace_format, args.speed, streams)
    with sending.to(err, engine=False) as (endpoint, connection):
        plan = sending.plan(
            LoadPlan,
            endpoint,
            connection,
            concurrency=args.concurrency or (),
            rates=args.rate or (),
            duration_per_level=args.duration_per_level,
            prompt_tokens=args.prompt_tokens,
            max_error_rate=args.max_error_rate,
            max_in_flight=args.max_in_flight,
            burst_start=args.burst_start,
        )
        with (
            serving_metrics(args, err) as metrics,
            sending.store() as store,
            ProgressBars(err, transient=True) as progress,
        ):
            result = load_endpoint(
                plan,
                store=store,
                slo=slo,
                confirmed=args.yes,
                on_progress=progress,
                on_sample=None if metrics is None else (lambda s: metrics.observe(s.trace)),
                workers=spread,
                replay=replay,
                find_max=found,
                auto_processes=args.processes == "auto",
                baseline=args.baseline,
                gates=gates,
            )
    emit(result.shown(), args)
    if result.store_error is not None:
        print(f"Error: {result.store_error}.", file=err)
        return EXIT_REQUEST_FAILED
    print(
        f"Run {result.run_id}: {len(result.samples)} traces kept in {result.store_path}; "
        f"`latdoc report {result.run_id}` renders it again, `latdoc compare` compares it.",
        file=err,
    )
    if result.status == "interrupted":
        return EXIT_INTERRUPTED
    failed = result.all_failed or result.gate_failed or not result.samples
    return EXIT_REQUEST_FAILED if failed else EXIT_OK
