"""``latdoc load``: sweep concurrency or arrival rate, and show latency and throughput by level."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from latdoc.cli._options import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REQUEST_FAILED,
    add_budget_arguments,
    add_metrics_arguments,
    add_output_tokens_argument,
    add_ray_argument,
    add_store_argument,
    add_target_arguments,
    api_key,
    duration,
    endpoint_and_connection,
    open_store,
    plan_default,
    positive_float,
    positive_int,
    start_metrics,
    target,
)
from latdoc.errors import UsageError
from latdoc.features.load import LoadPlan, LoadRun, Slo, Workers, load_endpoint, reload_load
from latdoc.report import ProgressBars
from latdoc.store import Store

DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16)
DEFAULT_DURATION_S = plan_default(LoadPlan, "duration_per_level")
DEFAULT_MAX_REQUESTS = plan_default(LoadPlan, "max_requests")
DEFAULT_MAX_SECONDS = plan_default(LoadPlan, "max_seconds")
DEFAULT_MAX_TOKENS = plan_default(LoadPlan, "max_tokens")
DEFAULT_PROMPT_TOKENS = plan_default(LoadPlan, "prompt_tokens")
DEFAULT_MAX_IN_FLIGHT = plan_default(LoadPlan, "max_in_flight")
DEFAULT_MAX_ERROR_RATE = plan_default(LoadPlan, "max_error_rate")
DEFAULT_RAY_WORKERS = 2


def int_list(text: str) -> tuple[int, ...]:
    """``1,2,4,8``: whole numbers of at least 1, in the order given."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of whole numbers: {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"each level must be at least 1: {text!r}")
    return values


def rate_list(text: str) -> tuple[float, ...]:
    """``0.5,1,2,4``: requests per second, each more than 0."""
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of rates: {text!r}") from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"each rate must be more than 0: {text!r}")
    return values


def parse_slo(text: str) -> Slo:
    """``ttft=2s,tpot=100ms``: the objectives a request must meet to count as goodput."""
    limits: dict[str, float] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        name = name.strip().lower()
        try:
            if name not in ("ttft", "tpot"):
                raise argparse.ArgumentTypeError(name)
            limits[name] = duration(value) * 1000.0
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"--slo {text!r}: expected ttft=DURATION and/or tpot=DURATION, e.g. "
                "ttft=2s,tpot=100ms"
            ) from None
    return Slo(ttft_ms=limits.get("ttft"), tpot_ms=limits.get("tpot"))


def share(text: str) -> float:
    value = positive_float(text.rstrip("%"))
    value = value / 100 if text.endswith("%") else value
    if value > 1:
        raise argparse.ArgumentTypeError(f"a share between 0 and 1 (or a percentage): {text!r}")
    return value


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
        "--concurrency", type=int_list, metavar="N,N,...",
        help="closed-loop levels: streams sending back to back "
        f"(default {','.join(str(n) for n in DEFAULT_CONCURRENCY)})",
    )  # fmt: skip
    levels.add_argument(
        "--rate", type=rate_list, metavar="R,R,...",
        help="open-loop levels: Poisson arrivals, requests per second",
    )  # fmt: skip
    p.add_argument(
        "--duration-per-level", type=duration, default=DEFAULT_DURATION_S, metavar="DURATION",
        help=f"how long each level sends (10s, 2m; a bare number is seconds; "
        f"default {DEFAULT_DURATION_S:g}s)",
    )  # fmt: skip
    p.add_argument(
        "--prompt-tokens", type=positive_int, default=DEFAULT_PROMPT_TOKENS, metavar="N",
        help=f"prompt length, in words of about a token (default {DEFAULT_PROMPT_TOKENS})",
    )  # fmt: skip
    add_output_tokens_argument(p, DEFAULT_MAX_TOKENS)
    g = add_budget_arguments(p, max_requests=DEFAULT_MAX_REQUESTS, max_seconds=DEFAULT_MAX_SECONDS)
    g.add_argument(
        "--max-error-rate", type=share, default=DEFAULT_MAX_ERROR_RATE, metavar="SHARE",
        help="stop the sweep when a level's failed share passes this "
        f"(default {DEFAULT_MAX_ERROR_RATE:g})",
    )  # fmt: skip
    g.add_argument(
        "--max-in-flight", type=positive_int, default=DEFAULT_MAX_IN_FLIGHT, metavar="N",
        help=f"open loop: requests open at once, at most (default {DEFAULT_MAX_IN_FLIGHT})",
    )  # fmt: skip
    p.add_argument(
        "--slo", type=parse_slo, metavar="ttft=2s,tpot=100ms",
        help="objectives a request must meet to count as goodput",
    )  # fmt: skip
    p.add_argument(
        "--yes", action="store_true",
        help="allow more than 64 streams against an endpoint that is not on this host",
    )  # fmt: skip
    w = p.add_argument_group("workers: when one process cannot keep the streams up")
    spread = w.add_mutually_exclusive_group()
    spread.add_argument(
        "--processes", type=positive_int, metavar="N",
        help="send from N local worker processes, each with its share of every level",
    )  # fmt: skip
    add_ray_argument(spread, "send from Ray actors on the cluster at ADDRESS")
    w.add_argument(
        "--workers", type=positive_int, metavar="N",
        help=f"with --ray: how many actors (default: {DEFAULT_RAY_WORKERS})",
    )  # fmt: skip
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    p.add_argument("--json", action="store_true", help="print the sweep as JSON")
    p.add_argument("--seed", type=int, help="seed for prompts and arrival times")
    add_metrics_arguments(p, "loading")
    add_store_argument(p)


def workers(args: argparse.Namespace) -> Workers | None:
    """The workers ``--processes`` or ``--ray``/``--workers`` ask for, if any."""
    if args.workers is not None and args.ray is None:
        raise UsageError("--workers counts Ray actors: give --ray ADDRESS too")
    if args.ray is not None:
        return Workers(args.workers or DEFAULT_RAY_WORKERS, ray=args.ray)
    if args.processes is not None:
        return Workers(args.processes)
    return None


def run(args: argparse.Namespace) -> int:
    key = api_key(args)
    spread = workers(args)
    err = sys.stderr
    concurrency = () if args.rate else (args.concurrency or DEFAULT_CONCURRENCY)
    with target(args, err, engine=False) as where:
        endpoint, connection = endpoint_and_connection(args, where, key)
        plan = LoadPlan(
            endpoint=endpoint,
            connection=connection,
            concurrency=concurrency,
            rates=args.rate or (),
            duration_per_level=args.duration_per_level,
            prompt_tokens=args.prompt_tokens,
            max_tokens=args.max_tokens,
            max_requests=args.max_requests,
            token_budget=args.token_budget,
            max_seconds=args.max_seconds,
            max_error_rate=args.max_error_rate,
            max_in_flight=args.max_in_flight,
            seed=args.seed,
        )
        progress = ProgressBars(err)
        metrics = start_metrics(args, err)
        with open_store(args, key) as store:
            try:
                result = load_endpoint(
                    plan,
                    store=store,
                    slo=args.slo,
                    confirmed=args.yes,
                    on_progress=progress,
                    on_sample=None if metrics is None else (lambda s: metrics.observe(s.trace)),
                    workers=spread,
                )
            finally:
                progress.clear()
                if metrics is not None:
                    metrics.close()
    emit(result, args, sys.stdout, terminal=True)
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
    failed = bool(result.samples) and all(not s.trace.ok for s in result.samples)
    return EXIT_REQUEST_FAILED if failed or not result.samples else EXIT_OK


def run_report(args: argparse.Namespace, store: Store) -> int:
    """``latdoc report`` of a load run."""
    emit(reload_load(store, args.run_id), args, sys.stdout, terminal=False)
    return EXIT_OK


def emit(result: LoadRun, args: argparse.Namespace, out: TextIO, *, terminal: bool) -> None:
    from latdoc.features.load import load_to_dict, render_load, render_load_html
    from latdoc.report import make_console

    title = f"{result.model} at {result.endpoint} under load"
    if args.html:
        path = Path(args.html)
        try:
            path.write_text(
                render_load_html(result.analysis, result.notes, title=title), encoding="utf-8"
            )
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None
        print(f"HTML report written to {path}", file=sys.stderr)
    if args.json:
        document = load_to_dict(result.analysis, notes=result.notes, run_id=result.run_id)
        out.write(json.dumps(document, indent=2) + "\n")
    elif terminal or not args.html:
        make_console(out).print(render_load(result.analysis, result.notes, title=title))
