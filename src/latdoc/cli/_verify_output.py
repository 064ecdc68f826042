"""What ``latdoc compare`` and ``latdoc verify`` print: a comparison of two runs, each
described in one line; a verify result with its verdict line, as text, as JSON
(:data:`VERIFY_SCHEMA`) or as an HTML page; and the outcome of an experiment with a
runner of its own (conversation, retry), as its own document, table and page.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from latdoc.analysis.gates import GateReport
from latdoc.errors import UsageError
from latdoc.features.verify import NOT_APPLICABLE, VerifyResult
from latdoc.features.verify import experiments as registry
from latdoc.features.verify.experiments import Outcome
from latdoc.pipeline import RunComparison
from latdoc.store import RunInfo

__all__ = [
    "VERIFY_SCHEMA",
    "describe",
    "emit_comparison",
    "emit_outcome",
    "emit_verify",
    "run_dict",
    "verdict_line",
]

VERIFY_SCHEMA = "latdoc.verify/1"


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
    if result.gates is not None:
        from latdoc.report import gates_to_dict

        document["gates"] = gates_to_dict(result.gates)
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
    console = make_console(sys.stdout)
    console.print(
        render_comparison(
            result.comparison,
            a_label=describe(result.a),
            b_label=describe(result.b),
            names=names,
        )
    )
    if result.gates is not None:
        from latdoc.report import render_gates

        console.print(render_gates(result.gates, names))


def verdict_line(result: VerifyResult) -> str:
    """The answer in one line: the verdict and what B saves, with its interval."""
    if result.verdict == NOT_APPLICABLE:
        return f"Verdict: not applicable — {result.reason}"
    m, gain, ci = result.headline, result.gain_ms, result.gain_interval_ms
    assert m is not None and gain is not None
    from latdoc.analysis.compare import TRIAL_MEAN
    from latdoc.report import format_ms, format_p

    interval = "" if ci is None else f" (95% CI {format_ms(ci[0])} … {format_ms(ci[1])})"
    what = "saves" if gain >= 0 else "adds"
    statistic, counted = m.statistic, ""
    if statistic == TRIAL_MEAN:
        statistic, counted = "mean", " trials (each trial's mean, the median over trials)"
    return (
        f"Verdict: {result.verdict} — B {what} {format_ms(abs(gain))} of {statistic} "
        f"{m.label} per request{interval}, {format_p(m.p_adjusted)}, n = {m.n_a}/{m.n_b}{counted}"
    )


def emit_verify(
    result: VerifyResult,
    infos: tuple[RunInfo, RunInfo] | None,
    args: argparse.Namespace,
    gates: GateReport | None = None,
) -> None:
    from latdoc.report import comparison_to_dict, gates_to_dict, make_console, render_comparison

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
            "p_value": None if result.headline is None else result.headline.p_adjusted,
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
        if gates is not None:
            document["gates"] = gates_to_dict(gates)
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
    if (caveat := registry.experiment(result.remedy).caveat) is not None:
        console.print(f"  {caveat}")
    console.print(line)
    if gates is not None:
        from latdoc.report import render_gates

        console.print(render_gates(gates))
    if result.run_ids is not None:
        print(
            f"Runs {result.run_ids[0]} (A) and {result.run_ids[1]} (B) kept in "
            f"{result.store_path}; `latdoc compare {result.run_ids[0]} {result.run_ids[1]}` "
            "shows them again.",
            file=sys.stderr,
        )


def emit_outcome(outcome: Outcome, args: argparse.Namespace) -> None:
    """An experiment's own outcome: its JSON document, or its table (and its HTML page
    when asked for and it has one), its notes, and where its runs are kept."""
    from latdoc.report import make_console

    if args.json:
        sys.stdout.write(json.dumps(outcome.document(), indent=2) + "\n")
        return
    if args.html and (page := outcome.page()) is not None:
        path = Path(args.html)
        try:
            path.write_text(page, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None
        print(f"HTML report written to {path}", file=sys.stderr)
    console = make_console(sys.stdout)
    console.print(outcome.renderable())
    for note in outcome.notes:
        console.print(f"  Note: {note.text}")
    print(outcome.kept(), file=sys.stderr)
