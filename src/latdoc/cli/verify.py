"""``latdoc compare`` and ``latdoc verify``: prove a remedy by measurement."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
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
    positive_float,
    positive_int,
    target,
)
from latdoc.errors import UsageError
from latdoc.pipeline import (
    NOT_APPLICABLE,
    ConversationVerdict,
    RetryVerdict,
    RunComparison,
    VerifyResult,
    compare_runs,
    cpu_count,
    verify_conversation,
    verify_remedy,
    verify_retry,
)
from latdoc.store import RunInfo, Store
from latdoc.workload import VerifyPlan, VerifyRemedy, arm_summaries

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


def describe(info: RunInfo) -> str:
    """One line that says what a run was."""
    what = info.meta.get("arm_label") if isinstance(info.meta, dict) else None
    label = f"{what}; " if what else ""
    return (
        f"{label}{info.kind} run {info.run_id} of {info.model} at {info.endpoint}, "
        f"{info.started_at:%Y-%m-%d %H:%M} UTC, {info.requests} requests"
    )


def run_dict(info: RunInfo) -> dict[str, Any]:
    return {
        "run_id": info.run_id,
        "kind": info.kind,
        "endpoint": info.endpoint,
        "model": info.model,
        "started_at": info.started_at.isoformat(),
        "requests": info.requests,
        "failed": info.failed,
        "label": info.meta.get("arm_label") if isinstance(info.meta, dict) else None,
    }


def emit_comparison(
    result: RunComparison, args: argparse.Namespace, names: tuple[str, str]
) -> None:
    from latdoc.report import comparison_to_dict, make_console, render_comparison

    document = comparison_to_dict(
        result.comparison, a=run_dict(result.a), b=run_dict(result.b), names=names
    )
    if args.json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    if args.html:
        from latdoc.report import render_comparison_html

        path = Path(args.html)
        try:
            path.write_text(
                render_comparison_html(
                    result.comparison, a_label=describe(result.a), b_label=describe(result.b)
                ),
                encoding="utf-8",
            )
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None
        print(f"HTML comparison written to {path}", file=sys.stderr)
    make_console(sys.stdout).print(
        render_comparison(
            result.comparison,
            a_label=describe(result.a),
            b_label=describe(result.b),
            names=names,
        )
    )


VERIFY_SCHEMA = "latdoc.verify/1"


def run_verify(args: argparse.Namespace) -> int:
    from latdoc.report import ProgressBars

    key = api_key(args)
    err = sys.stderr
    remedy = VerifyRemedy(args.remedy)
    http2 = True if remedy is VerifyRemedy.HTTP2 else None
    with target(args, err, engine=False, http2=http2) as where:
        endpoint, connection = endpoint_and_connection(args, where, key)
        plan = VerifyPlan(
            endpoint=endpoint,
            remedy=remedy,
            connection=connection,
            max_tokens=args.max_tokens,
            concurrency=args.concurrency,
            pool_size=args.pool_size,
            cpu_count=cpu_count(),
            from_tokens=args.from_tokens,
            to_tokens=args.to_tokens,
            prefix_tokens=args.prefix_tokens,
            generous_max_tokens=args.generous_max_tokens,
            alt_url=args.alt_url,
            alt_model=args.alt_model,
            turns=args.turns,
            trials=args.trials,
            tokens_per_turn=args.tokens_per_turn,
            strategies=args.strategies,
            reasoning_effort=args.reasoning_effort,
            max_requests=args.max_requests,
            token_budget=args.token_budget,
            max_seconds=args.max_seconds,
            precision=args.precision,
            seed=args.seed,
        )
        print(plan_line(plan), file=err)
        with Store(args.db, secrets=[key] if key else []) as store:
            with ProgressBars(err) as progress:
                if remedy is VerifyRemedy.RETRY:
                    retried = verify_retry(plan, store=store, on_progress=progress)
                elif remedy is VerifyRemedy.CONVERSATION:
                    held = verify_conversation(plan, store=store, on_progress=progress)
                else:
                    result = verify_remedy(plan, store=store, on_progress=progress)
            if remedy is VerifyRemedy.RETRY:
                emit_retry(retried, args)
                return EXIT_INTERRUPTED if retried.interrupted else EXIT_OK
            if remedy is VerifyRemedy.CONVERSATION:
                emit_conversation(held, args)
                return EXIT_INTERRUPTED if held.interrupted else EXIT_OK
            infos = (
                None
                if result.run_ids is None
                else (store.load_run(result.run_ids[0])[0], store.load_run(result.run_ids[1])[0])
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
    if plan.remedy is VerifyRemedy.CONVERSATION:
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


def verdict_line(result: VerifyResult) -> str:
    """The answer in one line: the verdict and what B saves, with its interval."""
    if result.verdict == NOT_APPLICABLE:
        return f"Verdict: not applicable — {result.reason}"
    m, gain, ci = result.headline, result.gain_ms, result.gain_interval_ms
    assert m is not None and gain is not None
    from latdoc.report import format_ms, format_p

    interval = "" if ci is None else f" (95% CI {format_ms(ci[0])} … {format_ms(ci[1])})"
    what = "saves" if gain >= 0 else "adds"
    return (
        f"Verdict: {result.verdict} — B {what} {format_ms(abs(gain))} of {m.statistic} "
        f"{m.label} per request{interval}, {format_p(m.p_value)}, n = {m.n_a}/{m.n_b}"
    )


def emit_verify(
    result: VerifyResult, infos: tuple[RunInfo, RunInfo] | None, args: argparse.Namespace
) -> None:
    from latdoc.report import comparison_to_dict, make_console, render_comparison

    line = verdict_line(result)
    if args.json:
        document: dict[str, Any] = {
            "schema": VERIFY_SCHEMA,
            "remedy": str(result.remedy),
            "verdict": result.verdict,
            "reason": result.reason,
            "headline": None if result.headline is None else result.headline.key,
            "statistic": None if result.headline is None else result.headline.statistic,
            "gain_ms": result.gain_ms,
            "gain_interval_ms": None
            if result.gain_interval_ms is None
            else list(result.gain_interval_ms),
            "p_value": None if result.headline is None else result.headline.p_value,
            "arms": {"A": result.labels[0], "B": result.labels[1]},
            "run_ids": None if result.run_ids is None else list(result.run_ids),
            "cached_tokens_b": result.cached_tokens_b,
            "stopped_because": result.stopped_because,
            "notes": [{"step": str(n.step), "text": n.text} for n in result.notes],
            "summary": line,
            "comparison": None
            if result.comparison is None or infos is None
            else comparison_to_dict(result.comparison, a=run_dict(infos[0]), b=run_dict(infos[1])),
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    console = make_console(sys.stdout)
    if result.comparison is not None and infos is not None:
        if args.html:
            from latdoc.report import render_comparison_html

            path = Path(args.html)
            try:
                path.write_text(
                    render_comparison_html(
                        result.comparison,
                        a_label=result.labels[0],
                        b_label=result.labels[1],
                        heading=f"verify {result.remedy}: {line}",
                    ),
                    encoding="utf-8",
                )
            except OSError as exc:
                raise UsageError(f"cannot write {path}: {exc.strerror}") from None
            print(f"HTML comparison written to {path}", file=sys.stderr)
        console.print(
            render_comparison(result.comparison, a_label=result.labels[0], b_label=result.labels[1])
        )
    for note in result.notes:
        console.print(f"  Note: {note.text}")
    if result.cached_tokens_b is not None:
        console.print(f"  B: the server reported {result.cached_tokens_b} prompt tokens cached.")
    if result.remedy is VerifyRemedy.MODEL:
        console.print(
            "  Speed is measured here; whether the answers are as good is yours to check."
        )
    console.print(line)
    if result.run_ids is not None:
        print(
            f"Runs {result.run_ids[0]} (A) and {result.run_ids[1]} (B) kept in "
            f"{result.store_path}; `latdoc compare {result.run_ids[0]} {result.run_ids[1]}` "
            "shows them again.",
            file=sys.stderr,
        )


def emit_conversation(held: ConversationVerdict, args: argparse.Namespace) -> None:
    from latdoc.report import (
        conversation_to_dict,
        make_console,
        render_conversation,
        render_conversation_html,
    )

    turns, descriptions, dropped = held.turns, held.descriptions, held.dropped
    if args.json:
        document = conversation_to_dict(
            held.outcomes,
            turns=turns,
            descriptions=descriptions,
            dropped=dropped,
            run_ids=held.run_ids,
        )
        document["notes"] = [{"step": str(n.step), "text": n.text} for n in held.notes]
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    if args.html:
        path = Path(args.html)
        try:
            page = render_conversation_html(
                held.outcomes, turns=turns, descriptions=descriptions, dropped=dropped
            )
            path.write_text(page, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None
        print(f"HTML report written to {path}", file=sys.stderr)
    console = make_console(sys.stdout)
    console.print(
        render_conversation(held.outcomes, turns=turns, descriptions=descriptions, dropped=dropped)
    )
    for note in held.notes:
        console.print(f"  Note: {note.text}")
    print(
        f"Runs kept in {held.store_path}: "
        + ", ".join(f"{name} {run_id}" for name, run_id in held.run_ids.items()),
        file=sys.stderr,
    )


def emit_retry(verdict: RetryVerdict, args: argparse.Namespace) -> None:
    from latdoc.report import make_console, render_retry, retry_to_dict

    if args.json:
        document = retry_to_dict(verdict.comparison, labels=verdict.labels, run_ids=verdict.run_ids)
        document["notes"] = [{"step": str(n.step), "text": n.text} for n in verdict.notes]
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    console = make_console(sys.stdout)
    console.print(render_retry(verdict.comparison, labels=verdict.labels))
    for note in verdict.notes:
        console.print(f"  Note: {note.text}")
    print(
        f"Runs {verdict.run_ids[0]} (A) and {verdict.run_ids[1]} (B) kept in {verdict.store_path}.",
        file=sys.stderr,
    )
