"""``latdoc compare`` and ``latdoc verify``: prove a remedy by measurement. This module
owns the two commands' options: compare reads two stored runs, verify plans the
experiment on the endpoint and runs it into the store; each prints what its feature
(:mod:`latdoc.features.compare`, :mod:`latdoc.features.verify`) makes of the result.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from latdoc.analysis.gates import parse_gates
from latdoc.cli._options import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REQUEST_FAILED,
    EXIT_USAGE,
    add_budget_arguments,
    add_gate_argument,
    add_html_argument,
    add_json_argument,
    add_output_tokens_argument,
    add_seed_argument,
    add_store_argument,
    add_target_arguments,
    plan_default,
    positive_float,
    positive_int,
)
from latdoc.cli._output import emit
from latdoc.cli._sending import Sending
from latdoc.features.compare import ShownComparison, compare_runs
from latdoc.features.verify import Outcome, VerifyPlan, plan_line, read_checks, verify_remedy
from latdoc.features.verify import experiments as registry
from latdoc.store import Store

DEFAULT_VERIFY_REQUESTS = plan_default(VerifyPlan, "max_requests")
DEFAULT_VERIFY_SECONDS = plan_default(VerifyPlan, "max_seconds")


def add_parsers(sub: argparse._SubParsersAction[Any]) -> None:
    compare = sub.add_parser(
        "compare",
        help="compare two stored runs: medians, intervals, significance",
        description="Compare two stored runs (probe, diagnose, or the arms of a verify) like "
        "with like: the same step, prompt length and concurrency. Per metric: both medians, "
        "the difference and the ratio with 95%% intervals, and a Mann–Whitney "
        "p-value adjusted for the number of tests. Sends nothing.",
    )
    compare.add_argument("run_a", help="run id (or unique prefix) of A, e.g. before the change")
    compare.add_argument("run_b", help="run id (or unique prefix) of B, e.g. after the change")
    compare.add_argument(
        "--allow-different",
        action="store_true",
        help="compare runs of different endpoints or models",
    )
    add_gate_argument(compare, "A, the baseline")
    out = compare.add_mutually_exclusive_group()
    add_json_argument(out, "print the comparison as JSON")
    add_html_argument(out, "write the comparison as an HTML page")
    add_store_argument(compare)

    v = sub.add_parser(
        "verify",
        help="measure whether a remedy works: an A/B experiment on the endpoint",
        description="A is today's way, B the remedy: trials interleaved in shuffled A/B "
        "blocks so drift hits both alike, both arms stored as runs, the result shown as "
        "`latdoc compare` shows it, with a verdict (better, worse, no_difference, trade, "
        "not_applicable) and the measured gain with its 95%% interval. The sample grows "
        "until the interval is tight or the budget is spent. With no URL (no --provider, "
        "no OPENAI_BASE_URL) the built-in simulated endpoint is used.",
    )
    add_target_arguments(v)
    add_remedy_arguments(v)
    add_output_tokens_argument(v, VerifyPlan)
    budget = add_budget_arguments(
        v, max_requests=DEFAULT_VERIFY_REQUESTS, max_seconds=DEFAULT_VERIFY_SECONDS
    )
    budget.add_argument("--precision", type=positive_float, default=0.05, metavar="F",
                        help="stop once the 95%% interval of the headline ratio is within "
                        "± F (default 0.05)")  # fmt: skip
    add_gate_argument(v, "A, today's way (B the remedy)")
    v.add_argument("--check", metavar="FILE", help="your own checks of the answers: JSON "
                   "Lines, a prompt or messages and one of contains, regex, json_schema, equals "
                   "or same_as_a; sent through both arms after the trials, each arm's pass "
                   "rate shown and their difference tested (a faster B that fails more is a "
                   "trade)")  # fmt: skip
    out = v.add_mutually_exclusive_group()
    add_json_argument(out, "print the result as JSON")
    add_html_argument(out, "write the comparison as an HTML page")
    add_store_argument(v)
    add_seed_argument(v, "prompts and the order of the arms")


CONVERTERS: dict[type, Callable[[str], Any]] = {int: positive_int, float: positive_float, str: str}
"""How an experiment's option of each kind is read: numbers more than 0, or text."""


def add_remedy_arguments(parser: argparse.ArgumentParser) -> None:
    """``--remedy`` with a choice per experiment of the registry, and their own options."""
    listed = "; ".join(f"{e.name}: {e.summary}" for e in registry.EXPERIMENTS)
    parser.add_argument(
        "--remedy",
        required=True,
        choices=registry.names(),
        help=f"what to test ({listed})".replace("%", "%%"),
    )
    group = parser.add_argument_group("remedy options")
    for a in registry.arguments():
        if a.kind is bool:
            group.add_argument(a.flag, dest=a.name, action="store_true", help=a.help)
            continue
        group.add_argument(
            a.flag,
            dest=a.name,
            type=CONVERTERS[a.kind],
            default=a.default,
            metavar=a.metavar,
            choices=a.choices,
            help=a.help,
        )


def run_compare(args: argparse.Namespace) -> int:
    gates = parse_gates(args.fail_if) if args.fail_if else ()
    with Store(args.db) as store:
        result = compare_runs(
            store, args.run_a, args.run_b, allow_different=args.allow_different, gates=gates
        )
    emit(ShownComparison(result), args)
    return EXIT_REQUEST_FAILED if result.gates_failed else EXIT_OK


def run_verify(args: argparse.Namespace) -> int:
    from latdoc.report import ProgressBars

    sending = Sending.of(args)
    err = sys.stderr
    spec = registry.experiment(args.remedy)
    checks = None if args.check is None else read_checks(args.check)
    http2 = True if spec.builtin_http2 else None
    with sending.to(err, engine=False, http2=http2) as (endpoint, connection):
        plan = sending.plan(
            VerifyPlan,
            endpoint,
            connection,
            remedy=spec,
            precision=args.precision,
            gates=parse_gates(args.fail_if) if args.fail_if else (),
            options=spec.read(vars(args)),
            checks=checks,
        )
        print(plan_line(plan), file=err)
        with sending.store(*spec.secrets_of(plan)) as store, ProgressBars(err) as bars:
            outcome: Outcome = verify_remedy(plan, store=store, on_progress=bars)
    emit(outcome, args)
    if outcome.not_applicable:
        return EXIT_USAGE
    if outcome.gates_failed:
        return EXIT_REQUEST_FAILED
    return EXIT_INTERRUPTED if outcome.interrupted else EXIT_OK
