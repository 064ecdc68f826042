"""MSER-5, the warm-up rule a load level's figures read (:func:`steady_state`), on series
whose warm-up is known by construction: a step at the start is found where it ends, a
series that drifts all along never settles, a short one is not judged, and a steady
series loses little."""

from __future__ import annotations

from collections import Counter

import numpy as np

from latdoc.analysis.stats import MIN_MSER_BATCHES, MSER_BATCH, steady_state


def test_too_short_a_series_is_not_judged() -> None:
    assert steady_state([1.0] * (MSER_BATCH * MIN_MSER_BATCHES - 1)) is None
    found = steady_state([1.0] * (MSER_BATCH * MIN_MSER_BATCHES))
    assert found is not None and found.reached


def test_a_step_at_the_start_is_cut_where_it_ends() -> None:
    """The first 40 of 300 TTFTs are 200 ms slower (a closed loop's first sends queued
    behind each other): the cut falls at 40 to 50 in four runs of five, and always past
    most of the step."""
    rng = np.random.default_rng(20261207)
    cuts: Counter[int] = Counter()
    for _ in range(400):
        x = rng.normal(100.0, 10.0, 300)
        x[:40] += 200.0
        found = steady_state(x)
        assert found is not None and found.reached
        cuts[found.warmup] += 1
    assert sum(n for cut, n in cuts.items() if 40 <= cut <= 50) >= 0.8 * 400
    assert all(cut >= 35 for cut in cuts)


def test_a_series_that_drifts_throughout_never_settles() -> None:
    rng = np.random.default_rng(3)
    found = steady_state(np.linspace(0.0, 100.0, 300) + rng.normal(0.0, 1.0, 300))
    assert found is not None and not found.reached and found.warmup == 0


def test_a_steady_series_loses_little() -> None:
    """Exponential TTFTs, the same all along: MSER-5 alone cuts where chance put high
    values early (a third of the series in one run of a hundred); what it would leave
    out must also differ from the rest, so a run of ten at most loses any, and under 2%
    of the series is lost on average."""
    rng = np.random.default_rng(11)
    cuts = [steady_state(rng.exponential(50.0, 300)) for _ in range(400)]
    left = np.array([c.warmup for c in cuts if c is not None])
    assert (left > 0).mean() <= 0.1
    assert left.mean() <= 0.02 * 300
