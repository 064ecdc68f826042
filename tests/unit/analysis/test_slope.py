"""The slope's interval holds its level: on simulated lines with noise, it covers the
true slope about as often as it says."""

from __future__ import annotations

import numpy as np

from latdoc.analysis.policy import CONFIDENCE
from latdoc.analysis.stats import slope_interval


def test_the_slope_interval_covers_the_true_slope_at_its_level() -> None:
    rng = np.random.default_rng(20261207)
    covered = 0
    reps = 1000
    for _ in range(reps):
        n = int(rng.integers(3, 12))
        x = np.arange(n, dtype=float) * 300.0
        y = 120.0 + 0.35 * x + rng.normal(0.0, 40.0, n)
        fit = slope_interval(list(x), list(y))
        assert fit is not None
        covered += fit.low <= 0.35 <= fit.high
    coverage = covered / reps
    print(f"coverage {coverage:.3f} at {CONFIDENCE}")
    assert abs(coverage - CONFIDENCE) < 0.02


def test_no_slope_without_three_points_or_a_spread() -> None:
    assert slope_interval([1.0, 2.0], [3.0, 4.0]) is None
    assert slope_interval([2.0, 2.0, 2.0], [1.0, 5.0, 9.0]) is None
    fit = slope_interval([0.0, 1.0, 2.0, 3.0], [1.0, 3.0, 5.0, 7.0])
    assert fit is not None and fit.slope == fit.low == fit.high == 2.0 and fit.at(10) == 21.0
