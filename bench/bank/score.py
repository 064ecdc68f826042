"""How a set of verdicts compares with the bank's truth: the figures of
``bench/calibration.py``, as plain numbers.

Each kind's rule is scored as a test (:func:`rule_rates`): its false alarms where the
kind is truly absent from the scenario's model, held against the policy's α by the
exact binomial upper bound, and its power where the kind truly matters."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from bank.counterfactual import Counterfactual
from bank.truth import Truth
from latdoc.analysis.policy import ALPHA, CONFIDENCE
from latdoc.model import RUN_KINDS, Diagnosis, Kind

BINS = 10


@dataclass(frozen=True, slots=True)
class Outcome:
    """One scenario: what it is and what the diagnosis said."""

    label: str
    truth: Truth | Counterfactual
    primary: Kind
    contributing: tuple[Kind, ...]
    confidence: float
    """The printed confidence: the probability the verdict is right."""
    requests: int
    rule_confidence: float | None = None
    """The primary rule's own confidence, which the printed one was read from."""
    found: frozenset[Kind] = frozenset()
    """Every kind a rule fired for, negligible ones included."""
    hard: tuple[str, ...] = ()
    """Why the scenario is in the hard slice (:mod:`bank.hard`); empty when it is not."""
    healthy_quirks: bool = False
    """A healthy endpoint with a quirk a healthy one may have (:mod:`bank.hard`)."""
    other_truth: Kind | None = None
    """The primary kind the other truth gives the scenario (the rule-copying one when
    this is the counterfactual, and the other way round)."""
    prompt_tokens: int | None = None
    """The user's typical prompt the scenario declared."""
    near_threshold: bool = False
    """The verdict said it was near a threshold."""

    @classmethod
    def of(cls, label: str, truth: Truth | Counterfactual, d: Diagnosis) -> Outcome:
        v = d.verdict
        return cls(
            label,
            truth,
            v.primary,
            v.contributing,
            v.confidence,
            d.requests,
            v.rule_confidence,
            frozenset(f.kind for f in d.findings),
            near_threshold=v.near_threshold,
        )

    @property
    def right(self) -> bool:
        return self.primary is self.truth.primary

    @property
    def named(self) -> frozenset[Kind]:
        if self.primary is Kind.HEALTHY:
            return frozenset()
        return frozenset((self.primary, *self.contributing))


def accuracy(outcomes: Sequence[Outcome]) -> float:
    return sum(o.right for o in outcomes) / max(1, len(outcomes))


def confusion(outcomes: Sequence[Outcome]) -> Counter[tuple[Kind, Kind]]:
    """(true primary, verdict primary) → scenarios."""
    return Counter((o.truth.primary, o.primary) for o in outcomes)


def recall_precision(
    outcomes: Sequence[Outcome], *, contributing_only: bool
) -> tuple[float, float, int, int]:
    """Recall and precision of the kinds named, with the true and the named count.

    ``contributing_only``: the contributing kinds alone, else every kind that matters
    (the primary and the contributing ones)."""
    hits = true_n = named_n = 0
    for o in outcomes:
        if contributing_only:
            true, named = set(o.truth.contributing), set(o.contributing)
        else:
            true, named = set(o.truth.named), set(o.named)
        hits += len(true & named)
        true_n += len(true)
        named_n += len(named)
    return hits / max(1, true_n), hits / max(1, named_n), true_n, named_n


@dataclass(frozen=True, slots=True)
class Bin:
    low: float
    high: float
    n: int
    confidence: float
    accuracy: float


def calibration(outcomes: Sequence[Outcome]) -> tuple[list[Bin], float]:
    """The verdicts binned by printed confidence, and the expected calibration error:
    the mean over verdicts of |accuracy − confidence| of their bin."""
    conf = np.array([o.confidence for o in outcomes])
    right = np.array([o.right for o in outcomes], dtype=float)
    edges = np.linspace(0.0, 1.0, BINS + 1)
    which = np.clip(np.digitize(conf, edges[1:-1], right=True), 0, BINS - 1)
    bins, ece = [], 0.0
    for b in range(BINS):
        mask = which == b
        n = int(mask.sum())
        if n == 0:
            continue
        mean_conf, acc = float(conf[mask].mean()), float(right[mask].mean())
        bins.append(Bin(float(edges[b]), float(edges[b + 1]), n, mean_conf, acc))
        ece += n / len(outcomes) * abs(acc - mean_conf)
    return bins, ece


def upper_bound(hits: int, n: int, level: float = CONFIDENCE) -> float:
    """The exact (Clopper–Pearson) one-sided upper bound at ``level`` of a rate seen
    ``hits`` times in ``n``: the rate is below it with that confidence. 1 when ``n`` is 0."""
    if n == 0:
        return 1.0
    return float(binomtest(hits, n, alternative="less").proportion_ci(level).high)


@dataclass(frozen=True, slots=True)
class RuleRate:
    """One kind's rule on the bank, as a test of "this kind is here".

    ``absent``: scenarios whose model lacks the kind altogether (not even present
    below the materiality bar); ``named`` and ``found`` of them: the verdict named it
    (primary or contributing), or a rule fired for it at all (negligible findings
    included). ``material``: scenarios where the kind truly matters; ``detected`` of
    them: the verdict named it. ``small``: scenarios where the kind is present but too
    small to matter; ``small_named`` of them: the verdict named it all the same."""

    kind: Kind
    absent: int
    named: int
    found: int
    material: int
    detected: int
    small: int = 0
    small_named: int = 0

    @property
    def named_rate(self) -> float:
        return self.named / max(1, self.absent)

    @property
    def named_upper(self) -> float:
        return upper_bound(self.named, self.absent)

    @property
    def found_rate(self) -> float:
        return self.found / max(1, self.absent)

    @property
    def found_upper(self) -> float:
        return upper_bound(self.found, self.absent)

    @property
    def power(self) -> float | None:
        """The share of scenarios where the kind matters that named it; None when the
        bank drew none."""
        return self.detected / self.material if self.material else None


def rule_rates(outcomes: Sequence[Outcome]) -> list[RuleRate]:
    """Every kind's false alarms and power over ``outcomes``, in :class:`Kind`'s order
    (``healthy``, which no rule finds, and the kinds of an agent's run, which the bank
    never draws, aside)."""
    rates = []
    for kind in Kind:
        if kind is Kind.HEALTHY or kind in RUN_KINDS:
            continue
        absent = [o for o in outcomes if kind not in o.truth.sizes_ms]
        material = [o for o in outcomes if kind in o.truth.named]
        small = [o for o in outcomes if kind in o.truth.sizes_ms and kind not in o.truth.named]
        rates.append(
            RuleRate(
                kind,
                absent=len(absent),
                named=sum(kind in o.named for o in absent),
                found=sum(kind in o.found for o in absent),
                material=len(material),
                detected=sum(kind in o.named for o in material),
                small=len(small),
                small_named=sum(kind in o.named for o in small),
            )
        )
    return rates


def within_alpha(hits: int, n: int, alpha: float = ALPHA) -> bool | None:
    """Whether a false-alarm rate of ``hits`` in ``n`` is at most ``alpha``: True when its
    upper bound is, False when the rate seen is above it, None when the rate seen is
    within it but the bound is not (too few scenarios to tell)."""
    if upper_bound(hits, n) <= alpha:
        return True
    if hits / max(1, n) > alpha:
        return False
    return None


def brier(outcomes: Sequence[Outcome]) -> float:
    """The mean squared gap between the printed confidence and being right (0 or 1)."""
    return float(np.mean([(o.confidence - o.right) ** 2 for o in outcomes]))


def brier_constant(outcomes: Sequence[Outcome]) -> float:
    """The Brier score of the best constant confidence: the share right itself, printed
    for every verdict (a confidence that knows only how often the bank is right)."""
    p = accuracy(outcomes)
    return p * (1 - p)


def auroc(outcomes: Sequence[Outcome]) -> float | None:
    """How well the confidence ranks right verdicts above wrong ones: the chance that a
    right verdict drawn at random has a higher confidence than a wrong one (ties count
    half); None when every verdict is right or every one wrong."""
    right = np.array([o.confidence for o in outcomes if o.right])
    wrong = np.array([o.confidence for o in outcomes if not o.right])
    if right.size == 0 or wrong.size == 0:
        return None
    above = (right[:, None] > wrong[None, :]).sum() + 0.5 * (right[:, None] == wrong[None, :]).sum()
    return float(above / (right.size * wrong.size))
