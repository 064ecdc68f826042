"""Fit the verdict's confidence to how often such verdicts are right, on the truth bank.

The primary rule's own confidence (:func:`latdoc.analysis._rule.confidence`: samples
behind the finding, margin over its threshold) ranks verdicts but is no probability:
verdicts printed at 0.4–0.7 were right more than nine times in ten. This script draws
scenarios from the truth bank (``bench/bank``) on a seed the evaluation does not use
(``bench/calibration.py`` evaluates on seed 1, ``tests/test_confidence.py`` on seed 3),
diagnoses each with the real ``build_diagnosis`` and fits, for each primary kind the
bank names at least :data:`MIN_KIND` times, a monotone map from the rule's confidence
to the observed share of right verdicts (scikit-learn's ``IsotonicRegression``), and
one map over all verdicts for the other kinds. Each step of a map holds at least
:data:`MIN_STEP` verdicts (narrower steps are merged with a neighbour) and reads
``(right + 1) / (n + 2)``, so no step claims 0 or 1 from a handful of verdicts.

It writes the maps and the bank's accuracy per primary kind, with its n, to
``src/latdoc/analysis/confidence_table.py``, which the analysis reads with
``numpy.interp`` (no scikit-learn at run time), and prints, on the two halves of the
fitting draw, whether maps per kind predict the other half better (Brier score) than
one map for all.
Run: ``.venv/bin/python bench/fit_confidence.py [--n 4000] [--seed 2]`` (≈ 1 min).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.isotonic import IsotonicRegression

from bank import context, draw_many, generate, truth
from latdoc.pipeline import build_diagnosis

VERSION = "bank-2"
"""Bump when the bank, the rules or this fit change the table."""
MIN_KIND = 150
"""The fewest verdicts of a primary kind that get a map of their own."""
MIN_STEP = 30
"""The fewest verdicts behind one step of a map."""
TABLE = Path(__file__).resolve().parent.parent / "src/latdoc/analysis/confidence_table.py"


@dataclass(frozen=True, slots=True)
class Scored:
    """One scenario's primary verdict: its kind, its rule's confidence, whether right."""

    kind: str
    rule_confidence: float
    right: bool


Map = tuple[tuple[float, ...], tuple[float, ...]]


def collect(n: int, seed: int) -> list[Scored]:
    """The primary kind, the rule's confidence and whether it was right, per scenario."""
    out = []
    for s in draw_many(n, seed):
        v = build_diagnosis(generate(s), context(s)).verdict
        raw = v.confidence if v.rule_confidence is None else v.rule_confidence
        out.append(Scored(str(v.primary), raw, v.primary is truth(s).primary))
    return out


def fit(verdicts: Sequence[Scored]) -> Map:
    """The breakpoints (x, y) of the monotone map from rule confidence to P(right)."""
    x = np.array([v.rule_confidence for v in verdicts])
    y = np.array([v.right for v in verdicts], dtype=float)
    fitted = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True).fit_transform(x, y)
    order = np.argsort(x, kind="stable")
    x, y, fitted = x[order], y[order], fitted[order]
    # Steps: runs of equal fitted value, merged until each holds MIN_STEP verdicts.
    steps: list[list[int]] = []
    for i in range(len(x)):
        if steps and fitted[i] == fitted[steps[-1][-1]]:
            steps[-1].append(i)
        else:
            steps.append([i])
    merged: list[list[int]] = []
    for step in steps:
        if merged and len(merged[-1]) < MIN_STEP:
            merged[-1] += step
        else:
            merged.append(step)
    if len(merged) > 1 and len(merged[-1]) < MIN_STEP:
        merged[-2] += merged.pop()
    # A step's probability with one right and one wrong verdict added; the merged and
    # smoothed steps are made monotone again, each weighted by its verdicts.
    rates = np.array([(y[s].sum() + 1) / (len(s) + 2) for s in merged])
    weights = np.array([len(s) + 2 for s in merged], dtype=float)
    rates = IsotonicRegression(increasing=True).fit_transform(
        np.arange(len(merged)), rates, sample_weight=weights
    )
    xs: list[float] = []
    ys: list[float] = []
    for step, rate in zip(merged, rates, strict=True):
        for edge in sorted({float(x[step[0]]), float(x[step[-1]])}):
            if xs and edge <= xs[-1]:
                continue
            xs.append(round(edge, 4))
            ys.append(round(float(rate), 4))
    return tuple(xs), tuple(ys)


def fit_all(verdicts: Sequence[Scored]) -> tuple[Map, dict[str, Map]]:
    by_kind: dict[str, list[Scored]] = defaultdict(list)
    for v in verdicts:
        by_kind[v.kind].append(v)
    own = {k: fit(vs) for k, vs in sorted(by_kind.items()) if len(vs) >= MIN_KIND}
    return fit(verdicts), own


def predict(v: Scored, everyone: Map, own: dict[str, Map]) -> float:
    xs, ys = own.get(v.kind, everyone)
    return float(np.interp(v.rule_confidence, xs, ys))


def brier(verdicts: Sequence[Scored], everyone: Map, own: dict[str, Map]) -> float:
    return float(np.mean([(predict(v, everyone, own) - v.right) ** 2 for v in verdicts]))


def accuracy(verdicts: Sequence[Scored]) -> dict[str, tuple[float, int]]:
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for v in verdicts:
        by_kind[v.kind].append(v.right)
    return {k: (round(sum(r) / len(r), 4), len(r)) for k, r in sorted(by_kind.items())}


def module(
    n: int, seed: int, everyone: Map, own: dict[str, Map], verdicts: Sequence[Scored]
) -> str:
    right = sum(v.right for v in verdicts)
    return f'''"""The verdict's confidence as a probability: maps fitted on the truth bank.

Generated by ``bench/fit_confidence.py``; do not edit. Regenerate with
``.venv/bin/python bench/fit_confidence.py --n {n} --seed {seed}``.

Fitted on {n} scenarios of ``bench/bank`` (``draw_many({n}, {seed})``), whose primary
verdicts were right {right} times ({right / n:.1%}). Each map is monotone, from the
primary rule's own confidence (x) to the share of such verdicts that were right (y),
read with ``numpy.interp`` (flat beyond its ends): one per primary kind the bank named
at least {MIN_KIND} times, :data:`ALL_KINDS` for the others. Each step of a map holds at
least {MIN_STEP} verdicts and reads (right + 1) / (n + 2).
"""

from collections.abc import Mapping
from typing import Final

VERSION: Final = {VERSION!r}
FIT_N: Final = {n}
FIT_SEED: Final = {seed}
"""The draw the maps were fitted on (``draw_many(FIT_N, FIT_SEED)``): evaluate elsewhere."""
ALL_KINDS: Final[tuple[tuple[float, ...], tuple[float, ...]]] = {everyone!r}
BY_KIND: Final[Mapping[str, tuple[tuple[float, ...], tuple[float, ...]]]] = {own!r}
BANK_ACCURACY: Final[Mapping[str, tuple[float, int]]] = {accuracy(verdicts)!r}
"""How often the bank's verdicts of each primary kind were right, and how many there were."""
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000, help="scenarios to draw (default 4000)")
    parser.add_argument("--seed", type=int, default=2, help="seed of the draw (default 2)")
    args = parser.parse_args()
    verdicts = collect(args.n, args.seed)
    half = len(verdicts) // 2
    for train, test, name in (
        (verdicts[:half], verdicts[half:], "first half → second"),
        (verdicts[half:], verdicts[:half], "second half → first"),
    ):
        everyone, own = fit_all(train)
        print(
            f"{name}: Brier one map {brier(test, everyone, {}):.4f}, "
            f"maps per kind {brier(test, everyone, own):.4f}"
        )
    everyone, own = fit_all(verdicts)
    TABLE.write_text(module(args.n, args.seed, everyone, own, verdicts))
    subprocess.run([Path(sys.executable).parent / "ruff", "format", "-q", str(TABLE)], check=True)
    print(f"wrote {TABLE.relative_to(Path.cwd()) if TABLE.is_relative_to(Path.cwd()) else TABLE}")
    for kind, (acc, n) in accuracy(verdicts).items():
        xs, ys = own.get(kind, everyone)
        mapped = "own map" if kind in own else "all kinds' map"
        print(f"  {kind:14} right {acc:.1%} of {n:4}; {mapped}: {list(zip(xs, ys, strict=True))}")


if __name__ == "__main__":
    main()
