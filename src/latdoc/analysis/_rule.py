"""What an attribution rule is, and how sure its finding is: a rule reads a run's
:class:`~latdoc.analysis.facts.Facts` and returns a
:class:`~latdoc.model.Finding` or ``None``, and every rule weighs its
finding's confidence alike, by the samples behind it and its margin over the threshold.
"""

from __future__ import annotations

from collections.abc import Callable

from latdoc.analysis.facts import Facts
from latdoc.model import Finding

__all__ = ["Rule", "confidence"]

Rule = Callable[[Facts], Finding | None]


def confidence(n: int, margin: float) -> float:
    """More samples and a wider margin over the threshold give more confidence."""
    sample_factor = min(1.0, n / 5.0)
    margin_factor = min(1.0, 0.6 + 0.4 * max(0.0, margin))
    return round(max(0.1, sample_factor * margin_factor), 2)
