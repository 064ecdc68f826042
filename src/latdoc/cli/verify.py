"""``latdoc compare`` and ``latdoc verify``: prove a remedy by measurement. This module
owns the two commands' options and runs them: compare reads two stored runs, verify
plans the A/B experiment on the endpoint and runs it into the store; what they print
is :mod:`._verify_output`'s.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from latdoc.cli._options import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    add_budget_arguments,
    add_output_tokens_argument,
    add_store_argument,
    add_target_arguments,
    api_key,
    endpoint_and_connection,
    open_store,
    positive_float,
    positive_int,
    target,
)
from latdoc.cli._verify_output import emit_comparison, emit_conversation, emit_retry, emit_verify
from latdoc.features.verify import (
    NOT_APPLICABLE,
    VerifyPlan,
    VerifyRemedy,
    arm_summaries,
    verify_conversation,
    verify_remedy,
    verify_retry,
)
from latdoc.features.verify import experiments as registry
from latdoc.pipeline import compare_runs
from latdoc.store import Store

DEFAULT_VERIFY_REQUESTS = 200
DEFAULT_VERIFY_SECONDS = 180.0


def add_parsers(sub: argparse._SubParsersAction[Any]) -> None:
    compare = sub.add_parser(
        "compare",
        help="compare two stored runs: medians, intervals, significance",
        description="Compare two stored runs (probe, diagnose, or the arms of a verify) like "
        "with like: the same step, prompt length and concurrency. Per metric: both medians, "
        "the difference and the ratio with 95%% bootstrap intervals, and a Mann–Whitney "
        "p-value adjusted for the number of tests. Sends nothing.",
    )
    compare.add_argument("run_a", help="run id (or unique prefix) of A, e.g. before the change")
    compare.add_argument("run_b", help="run id (or unique prefix) of B, e.g. after the change")
    compare.add_argument(
        "--allow-different",
        action="store_true",
        help="compare runs of different endpoints or models",
    )
    out = compare.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the comparison as JSON")
    out.add_argument("--html", metavar="FILE", help="write the comparison as an HTML page")
    add_store_argument(compare)

    v = sub.add_parser(
        "verify",
        help="measure whether a remedy works: an A/B experiment on the endpoint",
        description="A is today's way, B the remedy: trials interleaved in shuffled A/B "
        "blocks so drift hits both alike, both arms stored as runs, the result shown as "
        "`latdoc compare` shows it, with a verdict (better, worse, no_difference, "
        "not_applicable) and the measured gain with its 95%% interval. The sample grows "
        "until the interval is tight or the budget is spent. With no URL (and no "
        "OPENAI_BASE_URL) the built-in simulated endpoint is used.",
    )
    add_target_arguments(v)
    v.add_argument(
        "--remedy", required=True, choices=[r.value for r in VerifyRemedy], help="what to test"
    )
    r = v.add_argument_group("remedy options")
    r.add_argument("--concurrency", type=positive_int, default=8, metavar="N",
                   help="requests at once, for http2 and pool (default 8)")  # fmt: skip
    r.add_argument("--pool-size", type=positive_int, metavar="P",
                   help="your client's pool today (pool: required; http2: default N)")  # fmt: skip
    r.add_argument("--from", dest="from_tokens", type=positive_int, metavar="N",
                   help="trim: the prompt length today, in tokens")  # fmt: skip
    r.add_argument("--to", dest="to_tokens", type=positive_int, metavar="M",
                   help="trim: the trimmed prompt length, in tokens")  # fmt: skip
    r.add_argument("--prefix-tokens", type=positive_int, default=2048, metavar="N",
                   help="prompt-cache: the shared prefix (default 2048)")  # fmt: skip
    r.add_argument("--generous-max-tokens", type=positive_int, default=4096, metavar="N",
                   help="max-tokens: arm A's limit (default 4096)")  # fmt: skip
    r.add_argument("--alt", dest="alt_url", metavar="URL2",
                   help="endpoint: the other region or provider")  # fmt: skip
    r.add_argument("--alt-model", metavar="NAME", help="model: the model to try")
    r.add_argument("--reasoning-effort", default="low", metavar="EFFORT",
                   choices=["none", "minimal", "low", "medium", "high"],
                   help="reasoning-effort: the effort B asks for (default low; Anthropic: "
                   "a thinking budget, none disabling it)")  # fmt: skip
    r.add_argument("--trials", type=positive_int, default=40, metavar="N",
                   help="retry: logical requests per arm (default 40)")  # fmt: skip
    r.add_argument("--turns", type=positive_int, default=20, metavar="T",
                   help="conversation: turns in the chat (default 20)")  # fmt: skip
    r.add_argument("--tokens-per-turn", type=positive_int, default=200, metavar="K",
                   help="conversation: tokens the user adds each turn (default 200)")  # fmt: skip
    r.add_argument("--strategies", default="window:6,summary:10,reset:20", metavar="LIST",
                   help="conversation: window:N, summary:N, reset:N, comma-separated "
                   "(default window:6,summary:10,reset:20)")  # fmt: skip
    add_output_tokens_argument(v, 32)
    budget = add_budget_arguments(
        v, max_requests=DEFAULT_VERIFY_REQUESTS, max_seconds=DEFAULT_VERIFY_SECONDS
    )
    budget.add_argument("--precision", type=positive_float, default=0.05, metavar="F",
                        help="stop once the 95%% interval of the headline ratio is within "
                        "± F (default 0.05)")  # fmt: skip
    out = v.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the result as JSON")
    out.add_argument("--html", metavar="FILE", help="write the comparison as an HTML page")
    add_store_argument(v)
    v.add_argument("--seed", type=int, help="seed for prompts and the order of the arms")


def run_compare(args: argparse.Namespace) -> int:
    with Store(args.db) as store:
        result = compare_runs(store, args.run_a, args.run_b, allow_different=args.allow_different)
    emit_comparison(result, args, names=("A", "B"))
    return EXIT_OK


def run_verify(args: argparse.Namespace) -> int:
    from latdoc.report import ProgressBars

    key = api_key(args)
    err = sys.stderr
    remedy = VerifyRemedy(args.remedy)
    http2 = True if remedy == "http2" else None
    with target(args, err, engine=False, http2=http2) as where:
        endpoint, connection = endpoint_and_connection(args, where, key)
        plan = VerifyPlan(
            endpoint=endpoint,
            remedy=remedy,
            connection=connection,
            max_tokens=args.max_tokens,
            max_requests=args.max_requests,
            token_budget=args.token_budget,
            max_seconds=args.max_seconds,
            precision=args.precision,
            seed=args.seed,
            options=registry.experiment(remedy).read(args),
        )
        print(plan_line(plan), file=err)
        with open_store(args, key) as store:
            with ProgressBars(err) as progress:
                if remedy == "retry":
                    retried = verify_retry(plan, store=store, on_progress=progress)
                elif remedy == "conversation":
                    held = verify_conversation(plan, store=store, on_progress=progress)
                else:
                    result = verify_remedy(plan, store=store, on_progress=progress)
            if remedy == "retry":
                emit_retry(retried, args)
                return EXIT_INTERRUPTED if retried.interrupted else EXIT_OK
            if remedy == "conversation":
                emit_conversation(held, args)
                return EXIT_INTERRUPTED if held.interrupted else EXIT_OK
            infos = (
                None
                if result.run_ids is None
                else (store.run_info(result.run_ids[0]), store.run_info(result.run_ids[1]))
            )
    emit_verify(result, infos, args)
    if result.verdict == NOT_APPLICABLE:
        return EXIT_USAGE
    if any(n.text.startswith("interrupted") for n in result.notes):
        return EXIT_INTERRUPTED
    return EXIT_OK


def plan_line(plan: VerifyPlan) -> str:
    a, b = arm_summaries(plan)
    tokens = f", {plan.token_budget:,} tokens" if plan.token_budget else ""
    if plan.remedy == "conversation":
        return (
            f"Plan: verify conversation on {plan.endpoint.model} at {plan.endpoint.base_url}\n"
            f"  A: {a}\n  B: {b}\n"
            f"  Every strategy answers the same user turns, turn by turn in a shuffled order; "
            f"at most {plan.max_requests} requests{tokens} and {plan.max_seconds:g} s."
        )
    return (
        f"Plan: verify {plan.remedy} on {plan.endpoint.model} at {plan.endpoint.base_url}\n"
        f"  A: {a}\n  B: {b}\n"
        f"  Trials of A and B interleaved in shuffled blocks; at most {plan.max_requests} "
        f"requests{tokens} and {plan.max_seconds:g} s; stops early once the 95% interval of "
        f"A ÷ B is within ±{plan.precision:.0%}."
    )
