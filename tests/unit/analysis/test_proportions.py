"""A share's interval and the paired test of two shares, measured by simulation: the
interval latdoc prints for a pass rate (Wilson's) holds the true rate about 95% of the
time, and McNemar's exact test on two arms alike says "significant" at most α of the
time, up to the binomial draw."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from false_positives import tolerated
from latdoc.analysis.policy import ALPHA, CONFIDENCE
from latdoc.analysis.stats import mcnemar_p, proportion_interval

REPS = 2000
TOLERANCE = 3 * math.sqrt(CONFIDENCE * (1 - CONFIDENCE) / REPS)
"""Three binomial standard errors of a coverage of 95% over :data:`REPS`: 1.5 points."""

interval = functools.cache(proportion_interval)
"""One interval per count: a draw of n cases has only n + 1 outcomes."""


@pytest.mark.parametrize("n", [10, 20, 50])
def test_the_pass_rate_s_interval_holds_the_true_rate_about_95_percent_of_the_time(
    n: int,
) -> None:
    """The true rate is drawn anew for each replication, as a user's checks may pass at any
    rate: at one fixed rate a share of n cases has n + 1 outcomes, so any interval of it
    holds between 90% and 98% of the time depending on where the rate falls between them
    (Wilson's at 10 cases: 92% at 0.7, 98% at 0.5)."""
    rng = np.random.default_rng(23)
    rates = rng.uniform(0.02, 0.98, REPS)
    held = 0
    for rate, passed in zip(rates, rng.binomial(n, rates), strict=True):
        ci = interval(int(passed), n)
        assert ci is not None
        held += ci[0] <= rate <= ci[1]
    assert abs(held / REPS - CONFIDENCE) <= TOLERANCE, held / REPS


def test_no_interval_of_no_cases() -> None:
    assert proportion_interval(0, 0) is None


def _paired(rng: np.random.Generator, a: np.ndarray, b: np.ndarray) -> float | None:
    """McNemar's p of one replication: each case passes in A and in B at its own rate."""
    passed_a = rng.random(a.size) < a
    passed_b = rng.random(b.size) < b
    return mcnemar_p(int(np.sum(passed_a & ~passed_b)), int(np.sum(passed_b & ~passed_a)))


def test_mcnemar_on_two_arms_alike_is_significant_at_most_alpha() -> None:
    """30 cases, each passing at a rate of its own (some easy, some hard), the same in
    both arms, each arm's answer drawn apart."""
    rng = np.random.default_rng(29)
    called = 0
    for _ in range(REPS):
        rates = rng.uniform(0, 1, 30)
        p = _paired(rng, rates, rates)
        called += p is not None and p < ALPHA
    assert called <= tolerated(REPS), f"{called} of {REPS} at α = {ALPHA}"


def test_mcnemar_sees_a_remedy_that_fails_many_more_checks() -> None:
    """30 cases A passes 90% of the time and B 40%: the difference is seen nearly always."""
    rng = np.random.default_rng(31)
    seen = 0
    for _ in range(200):
        p = _paired(rng, np.full(30, 0.9), np.full(30, 0.4))
        seen += p is not None and p < ALPHA
    assert seen >= 190, seen


def test_mcnemar_reads_only_the_cases_the_arms_disagree_on() -> None:
    assert mcnemar_p(0, 0) is None
    # Six cases A passed and B failed, none the other way: 2 × ½⁶.
    assert mcnemar_p(6, 0) == pytest.approx(2 * 0.5**6)
    assert mcnemar_p(6, 0) == mcnemar_p(0, 6)
    assert mcnemar_p(3, 3) == pytest.approx(1.0)
