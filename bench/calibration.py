"""How often the diagnosis names the right kind of slow, and whether its confidence means it.

Draws N seeded scenarios from the truth bank (``bench/bank``: healthy endpoints, one
cause or two, clear or borderline, at three noise levels), records for each the
samples a real diagnosis run would, runs them through the real ``build_diagnosis``
and compares the verdict with the scenario's truth. Prints the confusion matrix of
true against named primary kind, the primary accuracy, the recall and precision of
the kinds named, each kind's rule as a test (its false alarms where the kind is truly
absent, with their exact 95% upper bound held against the policy's α, and its power
where the kind truly matters), the calibration of the printed confidence (accuracy
per confidence bin and the expected calibration error, beside the rule's own
confidence it was read from), the requests per verdict and the time it took, each
goal beside its figure.
The printed confidence comes from a table fitted on the bank
(``bench/fit_confidence.py``); its calibration is measured only on a draw the fit did
not see, so a ``--seed`` equal to the fit's is refused.
``--page docs/calibration.md`` also writes the same figures as a documentation page,
with its reliability plot beside it (``docs/calibration-reliability.png``).
Run: ``make bench`` or ``.venv/bin/python bench/calibration.py [--n 2000] [--seed 1]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import jinja2
from rich.console import Console
from rich.table import Table

from bank import CAUSES, NOISE, draw_many, evaluate
from bank.hard import EVALUATION_SEED, TUNING_SEEDS
from bank.score import (
    Bin,
    Outcome,
    accuracy,
    calibration,
    confusion,
    recall_precision,
    rule_rates,
    within_alpha,
)
from latdoc.analysis import confidence_table
from latdoc.analysis.policy import ALPHA, CONFIDENCE
from latdoc.model import Kind
from latdoc.reference import healthy_reference

GOAL_RECALL = GOAL_PRECISION = 0.90
GOAL_POWER = GOAL_RECALL
"""A rule's power where its kind truly matters: the recall goal, kind by kind."""
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
TEMPLATE = Path(__file__).with_name("calibration.md.j2")
MET, NOT_MET, UNSETTLED = "met", "not met", "unsettled"


def run(
    n: int, seed: int, *, realistic: bool = True, which: str = "counterfactual"
) -> tuple[list[Outcome], float]:
    """Every scenario's outcome against the truth named ``which``, and the seconds it took."""
    return evaluate.run(n, seed, realistic=realistic, which=which)


# -- the figures, as text tables both outputs render ------------------------------------


@dataclass(frozen=True, slots=True)
class Grid:
    """A table of text cells: what the terminal prints and the page shows alike.

    ``strong`` cells are the right answers (bold), ``wrong`` ones the wrong answers
    (red in the terminal); a cell reading ``met`` or ``not met`` is coloured there."""

    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]]
    left: int = 1
    """How many leading columns are text; the rest are numbers, aligned right."""
    strong: set[tuple[int, int]] = field(default_factory=set)
    wrong: set[tuple[int, int]] = field(default_factory=set)


def _mark(met: bool | None) -> str:
    return UNSETTLED if met is None else MET if met else NOT_MET


def _share(x: float) -> str:
    return f"{x:.1%}"


def confusion_grid(outcomes: Sequence[Outcome]) -> Grid:
    cells = confusion(outcomes)
    kinds = [k for k in Kind if any(k in pair for pair in cells)]
    grid = Grid(
        "true primary (rows) × verdict primary (columns)",
        ("true ↓ named →", *(SHORT[k] for k in kinds), "n", "right"),
        [],
    )
    for true in kinds:
        row = [cells[(true, named)] for named in kinds]
        total = sum(row)
        if total == 0:
            continue
        r = len(grid.rows)
        for c, (named, count) in enumerate(zip(kinds, row, strict=True), start=1):
            if count:
                (grid.strong if named is true else grid.wrong).add((r, c))
        shown = [str(count) if count else "·" for count in row]
        grid.rows.append((SHORT[true], *shown, str(total), f"{cells[(true, true)] / total:.0%}"))
    return grid


def worst_cells(outcomes: Sequence[Outcome], count: int = 6) -> list[tuple[int, Kind, Kind]]:
    """The largest wrong cells of the confusion matrix: (scenarios, true, named)."""
    wrong = ((c, t, v) for (t, v), c in confusion(outcomes).items() if t is not v)
    return sorted(wrong, key=lambda x: (-x[0], x[1].value, x[2].value))[:count]


def by_cause_grid(outcomes: Sequence[Outcome]) -> Grid:
    """Primary accuracy by each cause drawn, its strength and the noise level."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        causes, noise = o.label.split(" @")
        for cause in causes.split(" + "):
            groups[cause].append(o)
        groups[f"noise {noise}"].append(o)
        groups["pairs" if " + " in causes else "single or none"].append(o)
    rows = [(name, str(len(g)), _share(accuracy(g))) for name, g in sorted(groups.items())]
    return Grid("primary accuracy by what was drawn", ("drawn", "n", "right"), rows)


def rule_grid(outcomes: Sequence[Outcome]) -> Grid:
    """Each kind's rule as a test: false alarms where the kind is absent, power where
    it matters."""
    level = f"{CONFIDENCE:.0%}"
    rows = []
    for r in rule_rates(outcomes):
        power = r.power
        rows.append(
            (
                r.kind.value,
                str(r.absent),
                f"{_share(r.named_rate)} (≤ {_share(r.named_upper)})",
                _mark(within_alpha(r.named, r.absent)),
                f"{_share(r.found_rate)} (≤ {_share(r.found_upper)})",
                _mark(within_alpha(r.found, r.absent)),
                str(r.material),
                "—" if power is None else _share(power),
                "" if power is None else _mark(power >= GOAL_POWER),
                f"{r.small_named} of {r.small}",
            )
        )
    return Grid(
        f"each rule as a test: false alarms where the kind is absent (≤ α {ALPHA}), "
        f"power where it matters (≥ {GOAL_POWER:.0%})",
        (
            "kind",
            "absent",
            f"named (≤ {level} bound)",
            f"≤ α {ALPHA}",
            f"found (≤ {level} bound)",
            f"≤ α {ALPHA}",
            "matters",
            "power",
            f"≥ {GOAL_POWER:.0%}",
            "named when too small",
        ),
        rows,
    )


def calibration_grid(outcomes: Sequence[Outcome]) -> Grid:
    """The printed confidence's bins, and the rule's own confidence's beside them."""
    printed = {(b.low, b.high): b for b in calibration(outcomes)[0]}
    own = {(b.low, b.high): b for b in calibration(_rule_own(outcomes))[0]}

    def cells(b: Bin | None) -> tuple[str, ...]:
        if b is None:
            return ("·", "", "", "")
        return (
            str(b.n),
            f"{b.confidence:.2f}",
            f"{b.accuracy:.2f}",
            f"{b.accuracy - b.confidence:+.2f}",
        )

    rows = [
        (f"{low:.1f}–{high:.1f}", *cells(printed.get((low, high))), *cells(own.get((low, high))))
        for low, high in sorted(printed.keys() | own.keys())
    ]
    return Grid(
        "confidence against observed accuracy: printed, and the rule's own",
        (
            "confidence",
            "printed: n",
            "mean",
            "accuracy",
            "gap",
            "rule's own: n",
            "mean",
            "accuracy",
            "gap",
        ),
        rows,
    )


def _rule_own(outcomes: Sequence[Outcome]) -> list[Outcome]:
    """The outcomes scored by the primary rule's own confidence instead of the printed one."""
    return [replace(o, confidence=o.rule_confidence) for o in outcomes if o.rule_confidence]


GOAL_HARD = 0.88
GOAL_OUTSIDE_HARD = 0.97
GOAL_HEALTHY_QUIRKS = 0.98
GOAL_CONTRIBUTING = 0.75
GOAL_AUROC = 0.85
GOAL_AUROC_HARD = 0.80
GOAL_FLIPS = 0.05


def _figure(value: object, fmt: str = ".1%") -> str:
    return "—" if value is None else format(value, fmt)


def slices_grid(f: dict[str, object]) -> Grid:
    """The figures of the slices and of the confidence as a ranking, with their goals."""

    def at_least(value: object, goal: float) -> str:
        return "" if not isinstance(value, float) else _mark(value >= goal)

    def at_most(value: object, goal: float) -> str:
        return "" if not isinstance(value, float) else _mark(value <= goal)

    brier, constant = f["brier"], f["brier_constant"]
    rows = [
        (
            f"hard slice ({f['hard_slice_n']} scenarios)",
            _figure(f["hard_slice_accuracy"]),
            f"≥ {GOAL_HARD:.0%}",
            at_least(f["hard_slice_accuracy"], GOAL_HARD),
        ),
        (
            "outside the hard slice",
            _figure(f["outside_hard_accuracy"]),
            f"≥ {GOAL_OUTSIDE_HARD:.0%}",
            at_least(f["outside_hard_accuracy"], GOAL_OUTSIDE_HARD),
        ),
        ("all scenarios (the two slices' mix)", _figure(f["accuracy"]), "", ""),
        (
            f"healthy with quirks named healthy ({f['healthy_quirks_n']})",
            _figure(f["healthy_quirks_accuracy"]),
            f"≥ {GOAL_HEALTHY_QUIRKS:.0%}",
            at_least(f["healthy_quirks_accuracy"], GOAL_HEALTHY_QUIRKS),
        ),
        (
            "expected calibration error, all scenarios",
            _figure(f["ece"], ".3f"),
            f"≤ {GOAL_ECE}",
            at_most(f["ece"], GOAL_ECE),
        ),
        (
            "expected calibration error in the hard slice",
            _figure(f["ece_hard_slice"], ".3f"),
            f"≤ {GOAL_ECE}",
            at_most(f["ece_hard_slice"], GOAL_ECE),
        ),
        (
            "AUROC of the confidence, right against wrong",
            _figure(f["auroc"], ".2f"),
            f"≥ {GOAL_AUROC}",
            at_least(f["auroc"], GOAL_AUROC),
        ),
        (
            "… in the hard slice",
            _figure(f["auroc_hard_slice"], ".2f"),
            f"≥ {GOAL_AUROC_HARD}",
            at_least(f["auroc_hard_slice"], GOAL_AUROC_HARD),
        ),
        (
            "Brier score, against the best constant",
            f"{_figure(brier, '.4f')} vs {_figure(constant, '.4f')}",
            "below the constant",
            _mark(isinstance(brier, float) and isinstance(constant, float) and brier < constant),
        ),
        (
            f"primary flips over {evaluate.REPLAYS} noise seeds, outside the hard slice "
            f"({f['flip_n']} scenarios)",
            _figure(f["flip_rate"]),
            f"≤ {GOAL_FLIPS:.0%}",
            at_most(f["flip_rate"], GOAL_FLIPS),
        ),
        ("… in the hard slice", _figure(f["flip_rate_hard_slice"]), "", ""),
        (
            "primary of the counterfactual truth = primary of the rule-copying truth",
            _figure(f["truths_agree"]),
            "",
            "",
        ),
    ]
    return Grid("the slices and the confidence", ("measure", "value", "goal", ""), rows, left=4)


SENSITIVITY = (0.75, 1.25)
"""The factors the bank's truth moves the reference's values by, the product kept."""
SENSITIVITY_ROWS = (
    ("all scenarios", "accuracy", ".1%"),
    ("hard slice", "hard_slice_accuracy", ".1%"),
    ("outside the hard slice", "outside_hard_accuracy", ".1%"),
    ("healthy with quirks named healthy", "healthy_quirks_accuracy", ".1%"),
    ("kinds named: recall", "kinds_recall", ".1%"),
    ("kinds named: precision", "kinds_precision", ".1%"),
    ("contributing only: recall", "contributing_only_recall", ".1%"),
    ("contributing only: precision", "contributing_only_precision", ".1%"),
    ("expected calibration error", "ece", ".3f"),
    ("AUROC", "auroc", ".2f"),
)


def sensitivity(n: int, seed: int, realistic: bool) -> dict[float, dict[str, object]]:
    """The figures when the bank's truth takes causes back to the reference's values
    moved by each factor of :data:`SENSITIVITY` while the product keeps its own (no
    flips: the replays do not depend on the truth)."""
    out = {}
    for factor in SENSITIVITY:
        outcomes, _ = evaluate.run(n, seed, realistic=realistic, moved_by=factor)
        out[factor] = evaluate.figures(outcomes, (), seed)
    return out


def sensitivity_grid(f: dict[str, object], moved: dict[float, dict[str, object]]) -> Grid:
    """The figures as cited and with the truth's reference moved down and up."""
    columns = [("the reference −25%", moved.get(0.75)), ("as cited", f),
               ("the reference +25%", moved.get(1.25))]  # fmt: skip
    rows = [
        (name, *(_figure(figs[key], fmt) if figs else "—" for _, figs in columns))
        for name, key, fmt in SENSITIVITY_ROWS
    ]
    return Grid(
        "sensitivity: the truth's reference moved, the product's kept",
        ("moved", *(name for name, _ in columns)),
        rows,
        left=1,
    )


def profile_grid() -> Grid:
    """The reference profile both sides read: each quantity's slow edge, typical value
    and who says so."""
    rows = []
    for q in healthy_reference():
        sources = "; ".join(f"{src.by}{f' ({src.date})' if src.date else ''}" for src in q.sources)
        rows.append((q.label, f"{q.slow_edge:g} {q.unit}", f"{q.typical:g} {q.unit}", sources))
    return Grid(
        "the reference profile", ("quantity", "slow edge", "typical", "sources"), rows, left=1
    )


def truths_grid(outcomes: Sequence[Outcome]) -> Grid:
    """Where the counterfactual truth and the rule-copying one disagree: (this truth's
    primary, the other's) → scenarios, and how often the verdict sided with each."""
    cells: dict[tuple[Kind, Kind], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        if o.other_truth is not None and o.other_truth is not o.truth.primary:
            cells[(o.truth.primary, o.other_truth)].append(o)
    rows = [
        (
            SHORT[this],
            SHORT[other],
            str(len(group)),
            str(sum(o.primary is this for o in group)),
            str(sum(o.primary is other for o in group)),
        )
        for (this, other), group in sorted(cells.items(), key=lambda kv: -len(kv[1]))
    ]
    return Grid(
        "where the two truths disagree",
        (
            "counterfactual",
            "rule-copying",
            "scenarios",
            "verdict sided with the first",
            "with the second",
        ),
        rows,
        left=2,
    )


def goals_grid(outcomes: Sequence[Outcome], n: int, seed: int) -> Grid:
    acc = accuracy(outcomes)
    rec, prec, true_n, named_n = recall_precision(outcomes, contributing_only=False)
    c_rec, c_prec, c_true, c_named = recall_precision(outcomes, contributing_only=True)
    ece = calibration(outcomes)[1]
    rows = [
        ("primary accuracy (the slices' mix: no goal of its own)", _share(acc), "", ""),
        (
            "kinds named: recall",
            f"{_share(rec)} of {true_n}",
            f"≥ {GOAL_RECALL:.0%}",
            _mark(rec >= GOAL_RECALL),
        ),
        (
            "kinds named: precision",
            f"{_share(prec)} of {named_n}",
            f"≥ {GOAL_PRECISION:.0%}",
            _mark(prec >= GOAL_PRECISION),
        ),
        (
            "contributing only: recall",
            f"{_share(c_rec)} of {c_true}",
            f"≥ {GOAL_CONTRIBUTING:.0%}",
            _mark(c_rec >= GOAL_CONTRIBUTING),
        ),
        (
            "contributing only: precision",
            f"{_share(c_prec)} of {c_named}",
            f"≥ {GOAL_CONTRIBUTING:.0%}",
            _mark(c_prec >= GOAL_CONTRIBUTING),
        ),
        (
            f"expected calibration error (held out from the fit, {confidence_table.VERSION})",
            f"{ece:.3f}",
            f"≤ {GOAL_ECE}",
            _mark(ece <= GOAL_ECE),
        ),
    ]
    raw = _rule_own(outcomes)
    if raw:
        rows.append(
            ("the rule's own confidence, for comparison", f"{calibration(raw)[1]:.3f}", "", "")
        )
    requests = [o.requests for o in outcomes]
    rows.append(
        (
            "requests per verdict",
            f"median {statistics.median(requests):.0f} ({min(requests)}–{max(requests)})",
            "",
            "",
        )
    )
    return Grid(f"{n} scenarios, seed {seed}", ("figure", "value", "goal", ""), rows, left=4)


# -- the terminal -------------------------------------------------------------------------


def rich_table(grid: Grid) -> Table:
    table = Table(title=grid.title)
    for i, name in enumerate(grid.header):
        # The first column names the row: it keeps its width, the others wrap.
        table.add_column(name, justify="left" if i < grid.left else "right", no_wrap=i == 0)
    for r, row in enumerate(grid.rows):
        shown = []
        for c, cell in enumerate(row):
            if (r, c) in grid.strong:
                cell = f"[bold]{cell}[/]"
            elif (r, c) in grid.wrong:
                cell = f"[red]{cell}[/]"
            elif cell == MET:
                cell = f"[green]{cell}[/]"
            elif cell in (NOT_MET, UNSETTLED):
                cell = f"[red]{cell}[/]" if cell == NOT_MET else f"[yellow]{cell}[/]"
            shown.append(cell)
        table.add_row(*shown)
    return table


def report(
    console: Console,
    outcomes: Sequence[Outcome],
    n: int,
    seed: int,
    f: dict[str, object],
    moved: dict[float, dict[str, object]] | None = None,
) -> None:
    console.print(rich_table(confusion_grid(outcomes)))
    console.print(
        "worst cells: "
        + ", ".join(f"{t.value} → {v.value} ×{c}" for c, t, v in worst_cells(outcomes))
    )
    console.print(rich_table(by_cause_grid(outcomes)))
    console.print(rich_table(rule_grid(outcomes)))
    console.print(rich_table(calibration_grid(outcomes)))
    console.print(rich_table(truths_grid(outcomes)))
    console.print(rich_table(goals_grid(outcomes, n, seed)))
    console.print(rich_table(slices_grid(f)))
    if moved:
        console.print(rich_table(sensitivity_grid(f, moved)))


# -- the page -----------------------------------------------------------------------------


def markdown_table(grid: Grid) -> str:
    """``grid`` as a markdown table: right answers bold, numbers aligned right."""

    def cell(r: int, c: int, text: str) -> str:
        text = text.replace("|", "\\|")
        return f"**{text}**" if (r, c) in grid.strong and text else text

    align = ["---" if i < grid.left else "--:" for i in range(len(grid.header))]
    lines = [
        "| " + " | ".join(h.replace("|", "\\|") for h in grid.header) + " |",
        "|" + "|".join(align) + "|",
    ]
    for r, row in enumerate(grid.rows):
        lines.append("| " + " | ".join(cell(r, c, x) for c, x in enumerate(row)) + " |")
    return "\n".join(lines)


def command(n: int, seed: int, page: Path) -> str:
    return f".venv/bin/python bench/calibration.py --n {n} --seed {seed} --page {page}"


def plot_path(page: Path) -> Path:
    """Where the page's reliability plot goes: beside it, named after it."""
    return page.with_name(f"{page.stem}-reliability.png")


def reliability_plot(outcomes: Sequence[Outcome], path: Path) -> None:
    """Accuracy against confidence per bin, the printed confidence and the rule's own,
    with the diagonal a calibrated confidence lies on and each bin's count below."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hard = [o for o in outcomes if o.hard]
    rest = [o for o in outcomes if not o.hard]
    series = tuple(
        (name, calibration(group)[0], colour, marker)
        for name, group, colour, marker in (
            ("printed, every verdict", outcomes, "C0", "o"),
            ("printed, the hard slice", hard, "C3", "^"),
            ("printed, the rest", rest, "C2", "v"),
            ("the rule's own, every verdict", _rule_own(outcomes), "C1", "s"),
        )
        if group
    )
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(6.4, 6.4), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    top.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="calibrated")
    width = 0.08 / len(series)
    for i, (name, bins, colour, marker) in enumerate(series):
        x = [b.confidence for b in bins]
        y = [b.accuracy for b in bins]
        top.plot(x, y, marker=marker, color=colour, label=name)
        centres = [(b.low + b.high) / 2 + (i - (len(series) - 1) / 2) * width for b in bins]
        bars = bottom.bar(centres, [b.n for b in bins], width=width, color=colour)
        bottom.bar_label(bars, fontsize=5, color=colour, padding=1)
    top.set_xlim(0, 1)
    top.set_ylim(0, 1.02)
    top.set_ylabel("share of verdicts right")
    top.set_title(f"Reliability on {len(outcomes)} bank scenarios")
    top.grid(alpha=0.3)
    top.legend(loc="upper left", fontsize=8)
    bottom.set_xlabel("confidence (points: a bin's mean; bars: its verdicts, bins of width 0.1)")
    bottom.set_ylabel("verdicts")
    bottom.set_ylim(0, 1.25 * max(b.n for _, bins, _, _ in series for b in bins))
    bottom.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def write_page(
    outcomes: Sequence[Outcome],
    n: int,
    seed: int,
    page: Path,
    replayed: Sequence[evaluate.Flip] = (),
    moved: dict[float, dict[str, object]] | None = None,
) -> Path:
    """The figures of this run as a documentation page at ``page`` and its reliability
    plot beside it; returns the plot's path."""
    f = evaluate.figures(outcomes, replayed, seed)
    plot = plot_path(page)
    reliability_plot(outcomes, plot)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE.parent),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["table"] = markdown_table
    printed_ece = calibration(outcomes)[1]
    raw = _rule_own(outcomes)
    text = env.get_template(TEMPLATE.name).render(
        n=n,
        seed=seed,
        causes=[f"`{c}`" for c in CAUSES],
        noise=list(NOISE),
        command=command(n, seed, page),
        version=confidence_table.VERSION,
        fit_n=confidence_table.FIT_N,
        fit_seed=confidence_table.FIT_SEED,
        alpha=ALPHA,
        level=CONFIDENCE,
        goal_power=GOAL_POWER,
        goals=goals_grid(outcomes, n, seed),
        confusion=confusion_grid(outcomes),
        worst=[f"{t.value} → {v.value} ×{c}" for c, t, v in worst_cells(outcomes)],
        by_cause=by_cause_grid(outcomes),
        rules=rule_grid(outcomes),
        bins=calibration_grid(outcomes),
        ece=printed_ece,
        rule_ece=calibration(raw)[1] if raw else None,
        plot=plot.name,
        slices=slices_grid(f),
        profile=profile_grid(),
        sensitivity=sensitivity_grid(f, moved) if moved else None,
        truths=truths_grid(outcomes),
        disagreements=disagreements(outcomes),
        tuning_seeds=", ".join(str(x) for x in TUNING_SEEDS),
        evaluation_seed=EVALUATION_SEED,
        flips=len(replayed),
        replays=evaluate.REPLAYS,
    )
    page.write_text(text, encoding="utf-8")
    return plot


def disagreements(outcomes: Sequence[Outcome], count: int = 25) -> Grid:
    """The first scenarios where the two truths name different primary kinds."""
    rows = [
        (
            o.label,
            str(o.prompt_tokens),
            SHORT[o.truth.primary],
            SHORT[o.other_truth],
            SHORT[o.primary],
            ", ".join(
                f"{SHORT[k]} {v:.0f}"
                for k, v in sorted(o.truth.sizes_ms.items(), key=lambda kv: -kv[1])
            ),
        )
        for o in outcomes
        if o.other_truth is not None and o.other_truth is not o.truth.primary
    ][:count]
    return Grid(
        "scenarios where the truths disagree (the first few)",
        ("scenario", "prompt", "counterfactual", "rule-copying", "verdict", "savings (ms)"),
        rows,
        left=6,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="scenarios to draw (default 2000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the draw (default 1)")
    parser.add_argument(
        "--truth",
        choices=evaluate.TRUTHS,
        default="counterfactual",
        help="score against the counterfactual truth (default) or the rule-copying one",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="the plain draw (no workload, quirks or causes below a threshold)",
    )
    parser.add_argument(
        "--flips",
        type=int,
        default=200,
        metavar="N",
        help=f"replay the first N scenarios with {evaluate.REPLAYS} noise seeds each for the "
        "flip rate (default 200; 0: none)",
    )
    parser.add_argument(
        "--no-sensitivity",
        action="store_true",
        help="leave out the figures with the truth's reference moved 25%% down and up",
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument(
        "--page",
        type=Path,
        help="also write the figures as a documentation page here (e.g. docs/calibration.md), "
        "with its reliability plot beside it",
    )
    args = parser.parse_args()
    if args.seed == confidence_table.FIT_SEED:
        parser.error(
            f"seed {args.seed} drew the scenarios the confidence table was fitted on; "
            "its calibration is measured on another seed"
        )
    console = Console(width=max(130, Console().width))
    outcomes, took = run(args.n, args.seed, realistic=not args.plain, which=args.truth)
    scenarios = draw_many(min(args.flips, args.n), args.seed, realistic=not args.plain)
    start = time.perf_counter()
    replayed = evaluate.flips(scenarios)
    replaying = time.perf_counter() - start
    moved = (
        sensitivity(args.n, args.seed, not args.plain)
        if args.truth == "counterfactual" and not args.no_sensitivity
        else {}
    )
    f = evaluate.figures(outcomes, replayed, args.seed)
    report(console, outcomes, args.n, args.seed, f, moved)
    console.print(
        f"took {took:.1f} s ({1000 * took / args.n:.1f} ms a scenario), "
        f"and {replaying:.1f} s for {len(replayed)} × {evaluate.REPLAYS} replays"
    )
    if args.json:
        document = {**f, "sensitivity": {f"{factor:g}": figs for factor, figs in moved.items()}}
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.json}")
    if args.page:
        plot = write_page(outcomes, args.n, args.seed, args.page, replayed, moved)
        console.print(f"wrote {args.page} and {plot}")


if __name__ == "__main__":
    main()
