"""How a set of verdicts compares with the bank's truth: the figures of
``bench/calibration.py``, as plain numbers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bank.truth import Truth
from latdoc.model import Diagnosis, Kind

BINS = 10


@dataclass(frozen=True, slots=True)
class Outcome:
    """One scenario: what it is and what the diagnosis said."""

    label: str
    truth: Truth
    primary: Kind
    contributing: tuple[Kind, ...]
    confidence: float
    """The printed confidence: the probability the verdict is right."""
    requests: int
    rule_confidence: float | None = None
    """The primary rule's own confidence, which the printed one was read from."""

    @classmethod
    def of(cls, label: str, truth: Truth, d: Diagnosis) -> Outcome:
        v = d.verdict
        return cls(
            label, truth, v.primary, v.contributing, v.confidence, d.requests, v.rule_confidence
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
