"""How often the diagnosis names the right kind of slow, and whether its confidence means it.

Draws N seeded scenarios from the truth bank (``bench/bank``: healthy endpoints, one
cause or two, clear or borderline, at three noise levels), records for each the
samples a real diagnosis run would, runs them through the real ``build_diagnosis``
and compares the verdict with the scenario's truth. Prints the confusion matrix of
true against named primary kind, the primary accuracy, the recall and precision of
the kinds named, the calibration of the printed confidence (accuracy per confidence
bin and the expected calibration error, beside the rule's own confidence it was read
from), the requests per verdict and the time it took, each goal beside its figure.
The printed confidence comes from a table fitted on the bank
(``bench/fit_confidence.py``); its calibration is measured only on a draw the fit did
not see, so a ``--seed`` equal to the fit's is refused.
Run: ``make bench`` or ``.venv/bin/python bench/calibration.py [--n 2000] [--seed 1]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from rich.console import Console
from rich.table import Table

from bank import NOISE, context, draw_many, generate, truth
from bank.score import Outcome, accuracy, calibration, confusion, recall_precision
from latdoc.analysis import confidence_table
from latdoc.model import Kind
from latdoc.pipeline import build_diagnosis

GOAL_ACCURACY = 0.95
GOAL_RECALL = GOAL_PRECISION = 0.90
GOAL_ECE = 0.05
SHORT = {
    Kind.NETWORK_SETUP: "setup",
    Kind.NETWORK_PATH: "path",
    Kind.INPUT_LENGTH: "length",
    Kind.QUEUEING: "queue",
    Kind.DECODE: "decode",
    Kind.REASONING: "reason",
    Kind.STALLS: "stalls",
    Kind.BUFFERING: "buffer",
    Kind.CLIENT: "client",
    Kind.ERRORS: "errors",
    Kind.HEALTHY: "healthy",
}


def run(n: int, seed: int) -> tuple[list[Outcome], float, float]:
    """Every scenario's outcome, and the seconds spent generating and diagnosing."""
    outcomes = []
    generating = diagnosing = 0.0
    for s in draw_many(n, seed):
        t0 = time.perf_counter()
        samples = generate(s)
        true = truth(s)
        t1 = time.perf_counter()
        d = build_diagnosis(samples, context(s))
        t2 = time.perf_counter()
        generating += t1 - t0
        diagnosing += t2 - t1
        noise = next(k for k, v in NOISE.items() if v == s.jitter)
        outcomes.append(Outcome.of(f"{s.label} @{noise}", true, d))
    return outcomes, generating, diagnosing


def _mark(met: bool) -> str:
    return "[green]met[/]" if met else "[red]not met[/]"


def confusion_table(outcomes: Sequence[Outcome]) -> Table:
    cells = confusion(outcomes)
    kinds = [k for k in Kind if any(k in pair for pair in cells)]
    table = Table(title="true primary (rows) × verdict primary (columns)")
    table.add_column("true \\ named")
    for k in kinds:
        table.add_column(SHORT[k], justify="right")
    table.add_column("n", justify="right")
    table.add_column("right", justify="right")
    for true in kinds:
        row = [cells[(true, named)] for named in kinds]
        total = sum(row)
        if total == 0:
            continue
        shown = [
            (f"[bold]{c}[/]" if t is true else f"[red]{c}[/]") if c else "·"
            for t, c in zip(kinds, row, strict=True)
        ]
        table.add_row(SHORT[true], *shown, str(total), f"{cells[(true, true)] / total:.0%}")
    return table


def by_cause_table(outcomes: Sequence[Outcome]) -> Table:
    """Primary accuracy by each cause drawn, its strength and the noise level."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        causes, noise = o.label.split(" @")
        for cause in causes.split(" + "):
            groups[cause].append(o)
        groups[f"noise {noise}"].append(o)
        groups["pairs" if " + " in causes else "single or none"].append(o)
    table = Table(title="primary accuracy by what was drawn")
    table.add_column("drawn")
    table.add_column("n", justify="right")
    table.add_column("right", justify="right")
    for name in sorted(groups):
        group = groups[name]
        table.add_row(name, str(len(group)), f"{accuracy(group):.1%}")
    return table


def calibration_table(outcomes: Sequence[Outcome]) -> tuple[Table, float]:
    bins, ece = calibration(outcomes)
    table = Table(title="printed confidence against observed accuracy")
    for name in ("confidence", "n", "mean confidence", "accuracy", "gap"):
        table.add_column(name, justify="right")
    for b in bins:
        table.add_row(
            f"{b.low:.1f}–{b.high:.1f}",
            str(b.n),
            f"{b.confidence:.2f}",
            f"{b.accuracy:.2f}",
            f"{b.accuracy - b.confidence:+.2f}",
        )
    return table, ece


def report(console: Console, outcomes: Sequence[Outcome], n: int, seed: int) -> None:
    console.print(confusion_table(outcomes))
    worst = sorted(
        ((c, t, v) for (t, v), c in confusion(outcomes).items() if t is not v), reverse=True
    )[:6]
    console.print("worst cells: " + ", ".join(f"{t.value} → {v.value} ×{c}" for c, t, v in worst))
    console.print(by_cause_table(outcomes))
    table, ece = calibration_table(outcomes)
    console.print(table)
    acc = accuracy(outcomes)
    rec, prec, true_n, named_n = recall_precision(outcomes, contributing_only=False)
    c_rec, c_prec, c_true, c_named = recall_precision(outcomes, contributing_only=True)
    figures = Table(title=f"{n} scenarios, seed {seed}")
    for name in ("figure", "value", "goal", ""):
        figures.add_column(name)
    figures.add_row(
        "primary accuracy", f"{acc:.1%}", f"≥ {GOAL_ACCURACY:.0%}", _mark(acc >= GOAL_ACCURACY)
    )
    figures.add_row(
        "kinds named: recall",
        f"{rec:.1%} of {true_n}",
        f"≥ {GOAL_RECALL:.0%}",
        _mark(rec >= GOAL_RECALL),
    )
    figures.add_row(
        "kinds named: precision",
        f"{prec:.1%} of {named_n}",
        f"≥ {GOAL_PRECISION:.0%}",
        _mark(prec >= GOAL_PRECISION),
    )
    figures.add_row(
        "contributing only: recall",
        f"{c_rec:.1%} of {c_true}",
        f"≥ {GOAL_RECALL:.0%}",
        _mark(c_rec >= GOAL_RECALL),
    )
    figures.add_row(
        "contributing only: precision",
        f"{c_prec:.1%} of {c_named}",
        f"≥ {GOAL_PRECISION:.0%}",
        _mark(c_prec >= GOAL_PRECISION),
    )
    figures.add_row(
        f"expected calibration error (held out from the fit, {confidence_table.VERSION})",
        f"{ece:.3f}",
        f"≤ {GOAL_ECE}",
        _mark(ece <= GOAL_ECE),
    )
    raw = [replace(o, confidence=o.rule_confidence) for o in outcomes if o.rule_confidence]
    if raw:
        figures.add_row("  the rule's own confidence, for comparison", f"{calibration(raw)[1]:.3f}")
    requests = [o.requests for o in outcomes]
    figures.add_row(
        "requests per verdict",
        f"median {statistics.median(requests):.0f} ({min(requests)}–{max(requests)})",
        "",
        "",
    )
    console.print(figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="scenarios to draw (default 2000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the draw (default 1)")
    args = parser.parse_args()
    if args.seed == confidence_table.FIT_SEED:
        parser.error(
            f"seed {args.seed} drew the scenarios the confidence table was fitted on; "
            "its calibration is measured on another seed"
        )
    console = Console(width=max(100, Console().width))
    start = time.perf_counter()
    outcomes, generating, diagnosing = run(args.n, args.seed)
    report(console, outcomes, args.n, args.seed)
    took = time.perf_counter() - start
    console.print(
        f"took {took:.1f} s: generating and truth {generating:.1f} s, "
        f"build_diagnosis {diagnosing:.1f} s ({1000 * diagnosing / args.n:.1f} ms a verdict)"
    )


if __name__ == "__main__":
    main()
