"""The verdict's confidence as a probability: how often verdicts like it were right.

A rule's confidence (:func:`latdoc.analysis._rule.confidence`) weighs the samples
behind its finding and its margin over the threshold; it ranks verdicts but is no
probability. :func:`calibrated` reads the probability that the primary kind is right
from the truth bank's table (:mod:`latdoc.analysis.confidence_table`, fitted offline by
``bench/fit_confidence.py``): a monotone map of the rule's confidence for the primary
kind (or over all kinds, for a kind the bank seldom names), and beside it how often the
bank's verdicts of that kind were right.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from latdoc.analysis import confidence_table as table
from latdoc.model import Kind, Verdict

__all__ = ["calibrated", "probability_right"]


def probability_right(kind: Kind, rule_confidence: float) -> float:
    """The share of the truth bank's verdicts of ``kind`` at this rule confidence that
    were right, read from the table's monotone map (flat beyond its ends)."""
    xs, ys = table.BY_KIND.get(str(kind), table.ALL_KINDS)
    return round(float(np.interp(rule_confidence, xs, ys)), 3)


def calibrated(verdict: Verdict) -> Verdict:
    """``verdict`` with its rule's confidence replaced by the probability it is right,
    the rule's kept as ``rule_confidence``, and the bank's accuracy for its kind."""
    bank = table.BANK_ACCURACY.get(str(verdict.primary))
    return replace(
        verdict,
        confidence=probability_right(verdict.primary, verdict.confidence),
        rule_confidence=verdict.confidence,
        confidence_model=table.VERSION,
        bank_accuracy=None if bank is None else bank[0],
        bank_n=None if bank is None else bank[1],
    )
