"""A seeded slice of ``bench/coverage.py``: how often latdoc's 95% intervals of medians
hold the truth, 300 replications a row, each within a binomial tolerance of 95%.

The percentile bootstrap these intervals replaced held the median setup of seven new
connections 87% of the time (a resampled median of seven values takes few values) and
the difference of a noisy and a steady median of seven values 88%; both fail here."""

from __future__ import annotations

import math

import pytest

from coverage import (
    NOISY,
    STEADY,
    TYPICAL,
    Case,
    Latency,
    compare_difference,
    compare_ratio,
    faster,
    keepalive_saving,
    keepalive_setup,
    measure,
)
from latdoc.analysis.policy import CONFIDENCE, MIN_INTERVAL_N

REPS = 300
TOLERANCE = 3 * math.sqrt(CONFIDENCE * (1 - CONFIDENCE) / REPS)
"""Three binomial standard errors of a coverage of 95% over :data:`REPS`: 3.8 points."""

ROWS = {
    "one median of seven setups": keepalive_setup(Latency(60, 0.3), 7),
    "a noisy median less a steady one, 7 vs 7": compare_difference(
        NOISY, faster(STEADY, 0.9), 7, 7
    ),
    "a ratio of two medians, 5 vs 5": compare_ratio(TYPICAL, faster(TYPICAL, 0.8), 5, 5),
}


@pytest.mark.parametrize("name", ROWS)
def test_the_interval_holds_the_truth_about_95_percent_of_the_time(name: str) -> None:
    result = measure(ROWS[name], REPS, seed=17)
    assert result.given == REPS
    assert abs(result.rate - CONFIDENCE) <= TOLERANCE, (name, result.rate)


def test_no_interval_is_printed_below_the_minimum_n() -> None:
    """Keep-alive's saving from a diagnosis's 3 new and 4 reused connections: any interval
    of it held the truth about 91% of the time, so none is given."""
    assert MIN_INTERVAL_N > 4
    row: Case = keepalive_saving(TYPICAL, Latency(60, 0.3), 3, 4)
    assert measure(row, 50, seed=17).given == 0
