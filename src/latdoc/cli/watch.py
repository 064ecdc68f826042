"""``latdoc watch`` and ``latdoc report --watch``: latency across the day.

``watch`` sends a cold short, a warm short and a long request on a schedule, each
trace stored under the watch's name (resumed when the name is reused), optionally
served as Prometheus metrics; ``report --watch`` reads it back by the clock.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from latdoc.cli._options import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    add_budget_arguments,
    add_metrics_arguments,
    add_output_tokens_argument,
    add_seed_argument,
    add_store_argument,
    add_target_arguments,
    duration,
    non_negative_float,
    plan_default,
    positive_int,
    serving_metrics,
)
from latdoc.cli._output import emit
from latdoc.cli._sending import Sending
from latdoc.errors import UsageError
from latdoc.features.watch import (
    DURATION_S,
    EVERY_S,
    HOUR_OF_DAY_TITLE,
    LONG_TOKENS,
    MAX_REQUESTS,
    WatchClock,
    WatchPlan,
    clock_spans,
    duration_text,
    ended_sentences,
    started_sentence,
    watch_clock,
    watch_endpoint,
    watch_name,
)
from latdoc.i18n import N_
from latdoc.records import Sample, Step
from latdoc.report import make_console
from latdoc.store import Store

if TYPE_CHECKING:
    from latdoc.report.metrics import PrometheusMetrics

DEFAULT_JITTER = plan_default(WatchPlan, "jitter")
HOUR_OF_DAY = "hour-of-day"


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    w = sub.add_parser(
        "watch",
        help="measure the endpoint on a schedule, to see how it changes across the day",
        description="Every --every (with jitter) send a cold short, a warm short and a long "
        "(token-counted) request, and keep every trace under the watch's --name; the same "
        "name resumes the watch. Runs in the foreground until --duration from the watch's "
        "first start, the budget, or Ctrl-C; --once sends one tick, for cron or a systemd "
        "timer. `latdoc report --watch NAME --by hour-of-day` reads it back.",
    )
    add_target_arguments(w)
    w.add_argument(
        "--name",
        help="the watch's name: reuse it to resume (default: MODEL@HOST)",
    )
    w.add_argument(
        "--every", type=duration, default=EVERY_S, metavar="DURATION",
        help=f"interval between ticks, e.g. 30s, 5m, 1h (default {duration_text(EVERY_S)})",
    )  # fmt: skip
    w.add_argument(
        "--duration", type=duration, default=DURATION_S, metavar="DURATION",
        help="how long the watch lasts from its first start "
        f"(default {DURATION_S / 3600:g}h)",
    )  # fmt: skip
    w.add_argument(
        "--once", action="store_true",
        help="send one tick and exit (for cron or a systemd timer)",
    )  # fmt: skip
    w.add_argument(
        "--jitter", type=non_negative_float, default=DEFAULT_JITTER, metavar="F",
        help="move each tick by up to ± F of the interval, at random "
        f"(default {DEFAULT_JITTER:g})",
    )  # fmt: skip
    add_budget_arguments(
        w, max_requests=MAX_REQUESTS, over="over the whole watch, resumes included"
    )
    add_output_tokens_argument(w, WatchPlan)
    w.add_argument(
        "--long-tokens", type=positive_int, default=LONG_TOKENS, metavar="N",
        help=f"prompt length of the long request, in tokens (default {LONG_TOKENS})",
    )  # fmt: skip
    add_metrics_arguments(w, "watching")
    add_seed_argument(w, "generated prompts and the jitter")
    add_store_argument(w)


def add_report_arguments(report: argparse.ArgumentParser) -> None:
    """``report --watch NAME`` and how its buckets are cut."""
    g = report.add_argument_group("watch")
    g.add_argument("--watch", metavar="NAME", help="report the watch NAME by the clock")
    g.add_argument(
        "--by", choices=[HOUR_OF_DAY],
        help="hour-of-day: buckets of an hour over the UTC day (the default with --watch)",
    )  # fmt: skip
    g.add_argument(
        "--bucket", type=duration, metavar="DURATION",
        help="bucket width, e.g. 15m; alone: a plain time series",
    )  # fmt: skip
    g.add_argument(
        "--cycle", type=duration, metavar="DURATION",
        help="the repeating cycle buckets fold into (default 24h with --by hour-of-day)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    sending = Sending.of(args)
    err, out = sys.stderr, sys.stdout
    with (
        serving_metrics(args, err) as metrics,
        sending.to(err, engine=False) as (endpoint, connection),
    ):
        name = args.name or watch_name(endpoint)
        plan = sending.plan(
            WatchPlan,
            endpoint,
            connection,
            every_s=args.every,
            jitter=args.jitter,
            long_tokens=args.long_tokens,
        )
        with sending.store() as store:
            interrupted, clock = _watch(args, plan, name, store, metrics, err)
        make_console(out).print(*clock.shown(f"Watch {clock.name} {HOUR_OF_DAY_TITLE}").shown())
    print(
        f"`latdoc report --watch {name} --by hour-of-day --html FILE` renders it again.",
        file=err,
    )
    return EXIT_INTERRUPTED if interrupted else EXIT_OK


def _watch(
    args: argparse.Namespace,
    plan: WatchPlan,
    name: str,
    store: Store,
    metrics: PrometheusMetrics | None,
    err: TextIO,
) -> tuple[bool, WatchClock]:
    """Run the watch: whether Ctrl-C ended it (every finished trace is kept), and the
    watch by hour of day."""
    duration_s = None if args.once else args.duration

    def on_start(run_id: str, resumed: bool) -> None:
        said = started_sentence(
            plan, name, run_id, resumed, duration_s=duration_s, max_requests=args.max_requests
        )
        print(said, file=err, flush=True)

    def on_sample(sample: Sample) -> None:
        trace = sample.trace
        if metrics is not None and sample.step == Step.WATCH:
            metrics.observe(trace)
        if trace.error is not None:
            print(f"Error: {trace.error}", file=err, flush=True)

    run = watch_endpoint(
        plan,
        name=name,
        store=store,
        max_requests=args.max_requests,
        token_budget=args.token_budget,
        max_cost=args.max_cost,
        duration_s=duration_s,
        on_sample=on_sample,
        on_start=on_start,
    )
    assert run.clock is not None
    for line in ended_sentences(name, run.result):
        print(line, file=err, flush=True)
    return run.result is None, run.clock


def run_report(args: argparse.Namespace) -> int:
    if args.run_id:
        raise UsageError(N_("give a run id or --watch NAME, not both"))
    spans = clock_spans(
        bucket_s=args.bucket, cycle_s=args.cycle, by_hour_of_day=args.by == HOUR_OF_DAY
    )
    with Store(args.db) as store:
        clock = watch_clock(store, args.watch, bucket_s=spans.bucket_s, cycle_s=spans.cycle_s)
    emit(clock.shown(f"Watch {clock.name} {spans.how}"), args, terminal=False)
    return EXIT_OK
