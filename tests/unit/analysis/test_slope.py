"""The slope's interval holds its level: on simulated lines with noise, it covers the
true slope about as often as it says (Theil–Sen's interval errs on the safe side at
few points), and one point far off the line moves the slope little."""

from __future__ import annotations

import numpy as np
import pytest

from latdoc.analysis.policy import CONFIDENCE
from latdoc.analysis.stats import MIN_SLOPE_POINTS, slope_interval


@pytest.mark.parametrize("n", [MIN_SLOPE_POINTS, 8, 16])
def test_the_slope_interval_covers_the_true_slope_at_its_level(n: int) -> None:
    rng = np.random.default_rng(20261207 + n)
    covered = 0
    reps = 600
    for _ in range(reps):
        x = np.arange(n, dtype=float) * 300.0
        y = 120.0 + 0.35 * x + rng.normal(0.0, 40.0, n)
        fit = slope_interval(list(x), list(y))
        assert fit is not None
        covered += fit.low <= 0.35 <= fit.high
    coverage = covered / reps
    print(f"{n} points: coverage {coverage:.3f} at {CONFIDENCE}")
    assert CONFIDENCE - 0.025 <= coverage <= 0.99


def test_a_first_point_far_above_the_line_moves_the_slope_little() -> None:
    x = [1000.0 * k for k in range(1, 9)]
    y = [20 + 0.05 * v for v in x]
    y[0] += 150  # the first call paid for a new connection
    fit = slope_interval(x, y)
    assert fit is not None and fit.low <= 0.05 <= fit.high
    assert fit.slope == pytest.approx(0.05, rel=0.05)


def test_no_slope_without_enough_points_or_a_spread() -> None:
    assert slope_interval([1.0, 2.0, 3.0, 4.0], [3.0, 4.0, 5.0, 6.0]) is None
    assert slope_interval([2.0] * 6, [1.0, 5.0, 9.0, 2.0, 3.0, 4.0]) is None
    fit = slope_interval([0.0, 1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 5.0, 7.0, 9.0])
    assert fit is not None and fit.slope == fit.low == fit.high == 2.0 and fit.at(10) == 21.0
