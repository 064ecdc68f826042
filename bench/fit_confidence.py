"""Fit the verdict's confidence to how often verdicts with such evidence are right.

The primary rule's own confidence (samples behind it, margin over its threshold)
ranks verdicts no better than a coin against the bank's counterfactual truth. This
script draws scenarios from the truth bank's realistic draw (``bench/bank``) on a seed
the evaluation does not use (one of :data:`bank.hard.TUNING_SEEDS`; the published
figures come from :data:`bank.hard.EVALUATION_SEED`), diagnoses each with the real
``build_diagnosis``, reads the evidence of each verdict (``Verdict.evidence``, from
:func:`latdoc.analysis.calibration.evidence_of`: how near any other rule came to its
threshold, how far the primary's share is above its bar and above the next kind's,
the run's noise, its requests, the rule's own confidence, the findings) and fits a
logistic model of whether the primary kind is right (scikit-learn's
``LogisticRegression``), with an offset for each primary kind the bank names at least
:data:`MIN_KIND` times.

It writes the weights and the bank's accuracy per primary kind, with its n, to
``src/latdoc/analysis/confidence_table.py``, which the analysis reads (no scikit-learn
at run time), and prints, on the two halves of the fitting draw, the Brier score and
AUROC each half's fit reaches on the other, beside the best constant's Brier score.
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
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from bank import context, draw_many, generate
from bank.counterfactual import counterfactual
from bank.hard import EVALUATION_SEED, TUNING_SEEDS
from latdoc.analysis.calibration import BY_KIND, FEATURES
from latdoc.pipeline import build_diagnosis

VERSION = "bank-8"
"""Bump when the bank, the rules or this fit change the table."""
MIN_KIND = 100
"""The fewest verdicts of a primary kind that get an offset of their own."""
MONOTONE = ("nearest", "runner_up")
"""The probability never falls as every other answer falls farther away: where the fit
gives a kind a falling slope in one of these, its own weight is set so the slope is
flat (a kind's few verdicts near another threshold are not enough to say that being
far from it makes the verdict likelier wrong)."""
REGULARISATION = 1.0
"""scikit-learn's ``C``: the inverse strength of the L2 penalty on the weights."""
TABLE = Path(__file__).resolve().parent.parent / "src/latdoc/analysis/confidence_table.py"


@dataclass(frozen=True, slots=True)
class Scored:
    """One scenario's primary verdict: its kind, its evidence and whether it was right."""

    kind: str
    values: tuple[float, ...]
    right: bool


@dataclass(frozen=True, slots=True)
class Model:
    intercept: float
    weights: tuple[float, ...]
    offsets: dict[str, float]
    by_kind: dict[str, dict[str, float]]

    def p(self, v: Scored) -> float:
        z = self.intercept + self.offsets.get(v.kind, 0.0)
        z += sum(w * x for w, x in zip(self.weights, v.values, strict=True))
        named = dict(zip(FEATURES, v.values, strict=True))
        z += sum(w * named[f] for f, w in self.by_kind.get(v.kind, {}).items())
        return float(1 / (1 + np.exp(-z)))


def collect(n: int, seed: int) -> list[Scored]:
    """The primary kind, its evidence and whether it was right, per scenario."""
    out = []
    for s in draw_many(n, seed, realistic=True):
        d = build_diagnosis(generate(s), context(s))
        v = d.verdict
        values = tuple(v.evidence[name] for name in FEATURES)
        out.append(Scored(str(v.primary), values, v.primary is counterfactual(s).primary))
    return out


def fit(verdicts: Sequence[Scored]) -> Model:
    counts: dict[str, int] = defaultdict(int)
    for v in verdicts:
        counts[v.kind] += 1
    kinds = sorted(k for k, c in counts.items() if c >= MIN_KIND)
    index = [FEATURES.index(f) for f in BY_KIND]

    def row(v: Scored) -> list[float]:
        own = [float(v.kind == k) * v.values[i] for k in kinds for i in index]
        return [*v.values, *(float(v.kind == k) for k in kinds), *own]

    x = np.array([row(v) for v in verdicts])
    y = np.array([v.right for v in verdicts], dtype=int)
    model = LogisticRegression(C=REGULARISATION, max_iter=8000).fit(x, y)
    coef = model.coef_[0].copy()
    n, k = len(FEATURES), len(kinds)
    own = coef[n + k :].reshape(k, len(BY_KIND)).copy()
    for feature in MONOTONE:
        i, j = FEATURES.index(feature), BY_KIND.index(feature)
        # Each kind's slope (the shared weight plus its own) is at least flat; a kind
        # with too few verdicts for weights of its own has the shared slope alone, so
        # that one is at least flat too.
        slopes = np.maximum(own[:, j] + coef[i], 0.0)
        coef[i] = max(coef[i], 0.0)
        own[:, j] = slopes - coef[i]
    return Model(
        round(float(model.intercept_[0]), 4),
        tuple(round(float(c), 4) for c in coef[:n]),
        {kind: round(float(c), 4) for kind, c in zip(kinds, coef[n : n + k], strict=True)},
        {
            kind: {f: round(float(w), 4) for f, w in zip(BY_KIND, ws, strict=True)}
            for kind, ws in zip(kinds, own, strict=True)
        },
    )


def scores(verdicts: Sequence[Scored], model: Model) -> tuple[float, float, float]:
    """The Brier score, the best constant's and the AUROC on ``verdicts``."""
    p = np.array([model.p(v) for v in verdicts])
    y = np.array([v.right for v in verdicts], dtype=float)
    constant = float(y.mean() * (1 - y.mean()))
    auroc = float(roc_auc_score(y, p)) if 0 < y.sum() < len(y) else float("nan")
    return float(np.mean((p - y) ** 2)), constant, auroc


def accuracy(verdicts: Sequence[Scored]) -> dict[str, tuple[float, int]]:
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for v in verdicts:
        by_kind[v.kind].append(v.right)
    return {k: (round(sum(r) / len(r), 4), len(r)) for k, r in sorted(by_kind.items())}


def module(n: int, seed: int, model: Model, verdicts: Sequence[Scored]) -> str:
    right = sum(v.right for v in verdicts)
    return f'''"""The verdict's confidence as a probability: a logistic model fitted on the bank.

Generated by ``bench/fit_confidence.py``; do not edit. Regenerate with
``.venv/bin/python bench/fit_confidence.py --n {n} --seed {seed}``.

Fitted on {n} scenarios of the truth bank's realistic draw
(``draw_many({n}, {seed}, realistic=True)``) against its counterfactual truth, whose
primary verdicts were right {right} times ({right / n:.1%}). The probability that a
verdict is right is ``1 / (1 + exp(-z))``, ``z`` the :data:`INTERCEPT`, the
:data:`KIND_OFFSET` of its primary kind (0 for a kind seen fewer than {MIN_KIND} times),
and each of :data:`FEATURES` (:func:`latdoc.analysis.calibration.evidence_of`) times its
weight in :data:`WEIGHTS`, and of the features in :data:`KIND_WEIGHTS` times its kind's
own weight.
"""

from collections.abc import Mapping
from typing import Final

VERSION: Final = {VERSION!r}
FIT_N: Final = {n}
FIT_SEED: Final = {seed}
"""The draw the model was fitted on (``draw_many(FIT_N, FIT_SEED, realistic=True)``):
evaluate elsewhere."""
FEATURES: Final = {FEATURES!r}
WEIGHTS: Final = {model.weights!r}
INTERCEPT: Final = {model.intercept!r}
KIND_OFFSET: Final[Mapping[str, float]] = {model.offsets!r}
KIND_WEIGHTS: Final[Mapping[str, Mapping[str, float]]] = {model.by_kind!r}
"""Each primary kind's own weights of the nearness features, added to :data:`WEIGHTS`."""
BANK_ACCURACY: Final[Mapping[str, tuple[float, int]]] = {accuracy(verdicts)!r}
"""How often the bank's verdicts of each primary kind were right, and how many there were."""
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000, help="scenarios to draw (default 4000)")
    parser.add_argument("--seed", type=int, default=2, help="seed of the draw (default 2)")
    args = parser.parse_args()
    if args.seed == EVALUATION_SEED or args.seed not in TUNING_SEEDS:
        parser.error(f"fit on a tuning seed ({TUNING_SEEDS}), never on {EVALUATION_SEED}")
    verdicts = collect(args.n, args.seed)
    half = len(verdicts) // 2
    for train, test, name in (
        (verdicts[:half], verdicts[half:], "first half → second"),
        (verdicts[half:], verdicts[:half], "second half → first"),
    ):
        brier, constant, auroc = scores(test, fit(train))
        print(f"{name}: Brier {brier:.4f} (constant {constant:.4f}), AUROC {auroc:.3f}")
    model = fit(verdicts)
    TABLE.write_text(module(args.n, args.seed, model, verdicts))
    subprocess.run([Path(sys.executable).parent / "ruff", "format", "-q", str(TABLE)], check=True)
    print(f"wrote {TABLE}")
    weights = dict(zip(FEATURES, model.weights, strict=True))
    print(f"  intercept {model.intercept}, weights {weights}")
    print(f"  per kind: {model.by_kind}")
    for kind, (acc, count) in accuracy(verdicts).items():
        print(f"  {kind:14} right {acc:.1%} of {count:4}; offset {model.offsets.get(kind, 0.0)}")


if __name__ == "__main__":
    main()
