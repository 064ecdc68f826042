"""Summary statistics: one reusable :class:`Distribution` for every metric, and intervals.

An interval of a median, or of the difference or ratio of two medians, is read from the
order statistics (:data:`~latdoc.analysis.policy.MEDIAN_INTERVAL`): a median's is the
Hettmansperger–Sheather interval, exact whatever the distribution up to an interpolation
between two ranks, and two medians' intervals are combined by MOVER with Welch's degrees
of freedom. Nothing is resampled: one sample gives one interval, and a million values
cost a sort. No such interval is given below
:data:`~latdoc.analysis.policy.MIN_INTERVAL_N` values on a side, where no method tried
held its level (``bench/coverage.py`` measures every interval latdoc prints).
Intervals of other statistics (a mean, a p95) are percentile bootstraps
(``scipy.stats.bootstrap``) seeded through a numpy ``Generator``.
``scipy.stats`` is imported inside the functions that use it: importing it costs
about half a second, which ``import latdoc`` should not pay.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from latdoc.analysis.policy import (
    ALPHA,
    CONFIDENCE,
    MEDIAN_INTERVAL_DF,
    MIN_INTERVAL_N,
    PROPORTION_INTERVAL,
    RESAMPLES,
)
from latdoc.model.percentile import quantile as quantile
from latdoc.model.percentile import quantiles as quantiles

Statistic = Callable[..., Any]
"""A statistic that reduces along an ``axis`` keyword, such as ``np.median``."""
BootstrapMethod = Literal["percentile", "BCa"]


@dataclass(frozen=True, slots=True)
class Distribution:
    """A sample summarised; ``stdev`` is ``None`` for a single value."""

    n: int
    mean: float
    stdev: float | None
    min: float
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Distribution | None:
        """Summarise the measured values (``None`` and NaN entries are skipped)."""
        data = _measured(values)
        if data.size == 0:
            return None
        p50, p90, p99 = quantiles(data, (0.50, 0.90, 0.99))
        return cls(
            n=int(data.size),
            mean=float(np.mean(data)),
            stdev=float(np.std(data, ddof=1)) if data.size > 1 else None,
            min=float(np.min(data)),
            p50=float(p50),
            p90=float(p90),
            p99=float(p99),
            max=float(np.max(data)),
        )


def median_of(values: Iterable[float | None]) -> float | None:
    """The median of the measured values (``None`` entries are skipped); ``None`` if none."""
    data = [v for v in values if v is not None]
    return statistics.median(data) if data else None


def bootstrap_ci(
    values: Iterable[float],
    statistic: Statistic = np.median,
    *,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    resamples: int = RESAMPLES,
    method: BootstrapMethod = "percentile",
) -> tuple[float, float] | None:
    """A confidence interval for ``statistic`` of one sample: of a median (the default),
    its order-statistic interval (:func:`median_interval`); of another statistic, which
    must reduce along an ``axis`` keyword (``np.mean``), a bootstrap.

    ``None`` when the values are all equal, or too few: under
    :data:`~latdoc.analysis.policy.MIN_INTERVAL_N` for a median, under two otherwise.
    """
    data = _measured(values)
    if statistic is np.median:
        return median_interval(data, confidence=confidence)
    if data.size < 2 or np.ptp(data) == 0:
        return None
    return _bootstrap((data,), statistic, confidence, seed, resamples, method)


def median_interval(
    values: Iterable[float], *, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """The Hettmansperger–Sheather interval of the median (:func:`_median_bounds`).

    ``None`` under :data:`~latdoc.analysis.policy.MIN_INTERVAL_N` values, or when they
    are all equal.
    """
    data = _measured(values)
    if data.size < MIN_INTERVAL_N or np.ptp(data) == 0:
        return None
    _, low, high = _median_bounds(np.sort(data), confidence)
    return low, high


def mean_interval(
    values: Iterable[float], *, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """Student's t interval of the mean (:data:`~latdoc.analysis.policy.MEAN_INTERVAL`);
    ``None`` under two values or when they are all equal."""
    from scipy.stats import ttest_1samp

    data = _measured(values)
    if data.size < 2 or np.ptp(data) == 0:
        return None
    interval = ttest_1samp(data, 0.0).confidence_interval(confidence)
    return float(interval.low), float(interval.high)


@dataclass(frozen=True)
class Slope:
    """A line's slope with its interval at :data:`CONFIDENCE`, and its intercept: what
    one unit more of ``x`` adds to ``y``."""

    slope: float
    low: float
    high: float
    intercept: float

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x


MIN_SLOPE_POINTS = 5
"""The fewest points a slope's interval is given from: with fewer, the Theil–Sen
interval missed its level in simulation (68% of the time at three points)."""


def slope_interval(
    xs: Sequence[float], ys: Sequence[float], *, confidence: float = CONFIDENCE
) -> Slope | None:
    """The Theil–Sen slope of ``ys`` on ``xs`` (the median of the pairwise slopes) with
    its interval from Kendall's tau (``scipy.stats.theilslopes``): one point far off the
    line, such as a first call that paid for a new connection, moves it little where it
    drags a least-squares line. Simulated on lines with normal noise, the interval
    covers the true slope 96–99% of the time at 5 to 12 points and 95.6% at 16 to 30
    (``tests/unit/analysis/test_slope.py``). ``None`` under :data:`MIN_SLOPE_POINTS`
    points or when every ``x`` is the same."""
    from scipy.stats import theilslopes

    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if x.size < MIN_SLOPE_POINTS or x.size != y.size or np.ptp(x) == 0:
        return None
    fit = theilslopes(y, x, alpha=confidence)
    return Slope(
        float(fit.slope), float(fit.low_slope), float(fit.high_slope), float(fit.intercept)
    )


MSER_BATCH = 5
"""MSER-5 reads a series in batches of this many values."""
MIN_MSER_BATCHES = 10
"""The fewest batches MSER-5 is asked of: with fewer, one batch's noise decides."""


@dataclass(frozen=True, slots=True)
class SteadyState:
    """Where a series' steady state begins, by MSER-5."""

    warmup: int
    """Values at its start that are the warm-up (a multiple of :data:`MSER_BATCH`)."""
    reached: bool
    """The truncation fell inside the series' first half; where it fell at the half's
    end, the series never settled in its length and no value is left out."""


def steady_state(values: Sequence[float]) -> SteadyState | None:
    """MSER-5 (White, 1997; Franklin and White, 2008, the marginal standard error rule on
    batch means of five): the truncation ``d`` minimising the squared standard error of
    the mean of what follows it, ``Σ(m_i − m̄_d)² / (b − d)²`` over the ``b`` batch
    means, searched over the series' first half; where it falls at the half's end the
    series is said not to have reached a steady state. A cut stands only where the values
    it leaves out differ from the rest (two-sided Mann–Whitney at
    :data:`~latdoc.analysis.policy.ALPHA`). ``None`` under
    :data:`MIN_MSER_BATCHES` batches. Written here: numpy and scipy hold no truncation
    rule; it is a few lines over cumulative sums."""
    y = np.asarray(values, dtype=float)
    b = y.size // MSER_BATCH
    if b < MIN_MSER_BATCHES:
        return None
    means = y[: b * MSER_BATCH].reshape(b, MSER_BATCH).mean(axis=1)
    tail = means[::-1]
    n = np.arange(1, b + 1, dtype=float)
    first, second = np.cumsum(tail), np.cumsum(tail**2)
    # The spread of the last n batch means about their mean, over n², for each n.
    mser = (second - first**2 / n) / n**2
    # d runs over the first half: a short tail's few batch means can sit close together
    # by chance, and the rule would cut a settled series there.
    half = b // 2
    d = int(np.argmin(mser[::-1][: half + 1]))
    if d == half:
        return SteadyState(0, False)
    cut = d * MSER_BATCH
    # On a heavy-tailed steady series the rule cuts where chance put high values early:
    # the cut stands only where what it leaves out differs from the rest (Mann–Whitney
    # at the one alpha).
    if cut and (mann_whitney_p(y[:cut], y[cut:]) or 1.0) >= ALPHA:
        return SteadyState(0, True)
    return SteadyState(cut, True)


def quantile_interval(
    values: Iterable[float], q: float, *, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """The interval of the ``q`` quantile from order statistics
    (:data:`~latdoc.analysis.policy.QUANTILE_INTERVAL`). ``Y(l)`` lies above the quantile
    with probability ``P(Binomial(n, q) < l)`` and ``Y(u)`` below it with
    ``P(Binomial(n, q) ≥ u)``, whatever the distribution: each bound is the outermost
    rank whose miss is at most half of ``1 − confidence``, moved towards the next rank
    inward by the share of that half its miss leaves (linear in the miss between the
    two ranks). ``None`` when no rank bounds the quantile so (a p95 at 95% needs 72
    values: with fewer, every value lies below it more than 2.5% of the time), or when
    the values are all equal."""
    from scipy.stats import binom

    data = _measured(values)
    if data.size < 2 or np.ptp(data) == 0:
        return None
    n = data.size
    tail = (1 - confidence) / 2
    below = int(binom.ppf(tail, n, q))
    if binom.cdf(below, n, q) > tail:
        below -= 1
    upper = int(binom.ppf(1 - tail, n, q)) + 1
    if below < 0 or upper > n:
        return None
    y = np.sort(data)
    low, high = float(y[below]), float(y[upper - 1])
    if below + 1 < upper - 2:
        missed, inner = float(binom.cdf(below, n, q)), float(binom.cdf(below + 1, n, q))
        low += (tail - missed) / (inner - missed) * (y[below + 1] - y[below])
        missed, inner = float(binom.sf(upper - 1, n, q)), float(binom.sf(upper - 2, n, q))
        high -= (tail - missed) / (inner - missed) * (y[upper - 1] - y[upper - 2])
    return low, high


def difference_ci(
    a: Iterable[float],
    b: Iterable[float],
    *,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    resamples: int = RESAMPLES,
    method: BootstrapMethod = "percentile",
    statistic: Statistic = np.median,
) -> tuple[float, float] | None:
    """A confidence interval for ``median(a) − median(b)`` of two independent samples:
    each median's order-statistic interval, the two combined by :func:`_mover`. Of
    another ``statistic`` (``np.mean``), a bootstrap resampling each sample on its own.

    ``None`` when both samples are constant, or either is too small: under
    :data:`~latdoc.analysis.policy.MIN_INTERVAL_N` values for medians, under two otherwise.
    """
    samples = _two_samples(a, b)
    if samples is None:
        return None
    if statistic is np.median:
        return _median_difference(*samples, confidence)

    def difference(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], axis: int) -> Any:
        return statistic(x, axis=axis) - statistic(y, axis=axis)

    return _bootstrap(samples, difference, confidence, seed, resamples, method)


def ratio_ci(
    a: Iterable[float],
    b: Iterable[float],
    *,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    resamples: int = RESAMPLES,
    method: BootstrapMethod = "percentile",
    statistic: Statistic = np.median,
) -> tuple[float, float] | None:
    """A confidence interval for ``median(a) / median(b)``: "a is r× b". Of medians,
    :func:`difference_ci`'s interval of the logs' medians (order statistics follow the
    log), turned back into a ratio; of another ``statistic`` (``np.mean``), a bootstrap
    resampling each sample on its own.

    ``None`` when both samples are constant or either is too small (as
    :func:`difference_ci`); for medians, when a value is not positive (no latency is);
    for another statistic, when ``b``'s values are not all of one sign (a resample's
    statistic could be zero).
    """
    samples = _two_samples(a, b)
    if samples is None:
        return None
    x, y = samples
    if statistic is np.median:
        if np.min(x) <= 0 or np.min(y) <= 0:
            return None
        logs = _median_difference(np.log(x), np.log(y), confidence)
        return None if logs is None else (math.exp(logs[0]), math.exp(logs[1]))
    if not (np.all(y > 0) or np.all(y < 0)):
        return None

    def ratio(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], axis: int) -> Any:
        return statistic(x, axis=axis) / statistic(y, axis=axis)

    return _bootstrap(samples, ratio, confidence, seed, resamples, method)


def _median_bounds(
    ordered: npt.NDArray[np.float64], confidence: float
) -> tuple[float, float, float]:
    """The median of the sorted values and its Hettmansperger–Sheather interval.

    ``[Y(d), Y(n+1−d)]`` holds the median with probability ``1 − 2·P(Binomial(n, ½) < d)``
    whatever the distribution; ``d`` is the innermost rank whose level reaches
    ``confidence``, and the bounds move towards ``Y(d+1)`` and ``Y(n−d)`` by the share
    Hettmansperger and Sheather (1986) derive from the two ranks' exact levels. Where no
    rank reaches the level (five values at 95%) the bounds are the extremes (93.75%)."""
    from scipy.stats import binom

    n = ordered.size
    tail = (1 - confidence) / 2
    below = int(binom.ppf(tail, n, 0.5))
    if binom.cdf(below, n, 0.5) > tail:
        below -= 1
    d = below + 1
    median = float(np.median(ordered))
    if d < 1 or d + 1 > n - d:
        return median, float(ordered[0]), float(ordered[-1])
    outer = 1 - 2 * float(binom.cdf(d - 1, n, 0.5))
    inner = 1 - 2 * float(binom.cdf(d, n, 0.5))
    share = (outer - confidence) / (outer - inner)
    step = (n - d) * share / (d + (n - 2 * d) * share)
    low = ordered[d - 1] + step * (ordered[d] - ordered[d - 1])
    high = ordered[n - d] - step * (ordered[n - d] - ordered[n - d - 1])
    return median, float(low), float(high)


def _median_difference(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], confidence: float
) -> tuple[float, float] | None:
    if x.size < MIN_INTERVAL_N or y.size < MIN_INTERVAL_N:
        return None
    mx, lx, hx = _median_bounds(np.sort(x), confidence)
    my, ly, hy = _median_bounds(np.sort(y), confidence)
    below = _mover(mx - lx, x.size, hy - my, y.size, confidence)
    above = _mover(hx - mx, x.size, my - ly, y.size, confidence)
    return mx - my - below, mx - my + above


def _mover(reach_x: float, n_x: int, reach_y: float, n_y: int, confidence: float) -> float:
    """How far one bound of ``median(x) − median(y)`` lies from it, from how far each
    median's own interval reaches on that side: MOVER (the method of variance estimates
    recovery, Zou and Donner 2008) adds the two reaches in quadrature. Each reach is first
    read as a standard error through Student's t with
    :data:`~latdoc.analysis.policy.MEDIAN_INTERVAL_DF` × √n degrees of freedom, and the
    sum is widened by the t of the Welch–Satterthwaite degrees of freedom: plain MOVER
    held 97–98% where the two sides are alike (two noisy reaches added in quadrature
    overstate their sum's), and this keeps a one-sided case (the other median known
    well) at its own median's interval."""
    from scipy.stats import t

    q = (1 + confidence) / 2
    df_x = MEDIAN_INTERVAL_DF * math.sqrt(n_x)
    df_y = MEDIAN_INTERVAL_DF * math.sqrt(n_y)
    se_x = reach_x / float(t.ppf(q, df_x))
    se_y = reach_y / float(t.ppf(q, df_y))
    variance = se_x**2 + se_y**2
    if variance == 0:
        return 0.0
    df = variance**2 / (se_x**4 / df_x + se_y**4 / df_y)
    return float(t.ppf(q, df)) * math.sqrt(variance)


def mann_whitney_p(a: Iterable[float], b: Iterable[float]) -> float | None:
    """Two-sided Mann–Whitney U p-value that ``a`` and ``b`` come from one distribution.

    Near 1 for samples from the same distribution, small when one is shifted.
    ``None`` when either sample is empty.
    """
    from scipy.stats import mannwhitneyu

    x, y = _measured(a), _measured(b)
    if x.size == 0 or y.size == 0:
        return None
    p = float(mannwhitneyu(x, y, alternative="two-sided").pvalue)
    return 1.0 if np.isnan(p) else p


def proportion_interval(successes: int, n: int) -> tuple[float, float] | None:
    """The 95% interval of a share of ``successes`` in ``n``
    (:data:`~latdoc.analysis.policy.PROPORTION_INTERVAL`: Wilson's score interval, from
    scipy's binomial test); ``None`` for no trials."""
    from scipy.stats import binomtest

    if n == 0:
        return None
    ci = binomtest(successes, n).proportion_ci(
        confidence_level=CONFIDENCE, method=PROPORTION_INTERVAL
    )
    return float(ci.low), float(ci.high)


def mcnemar_p(only_a: int, only_b: int) -> float | None:
    """McNemar's exact two-sided p-value that two arms succeed alike on paired cases, from
    the discordant pairs alone: ``only_a`` cases A passed and B failed, ``only_b`` the other
    way. The cases both passed or both failed say nothing of a difference; under none, each
    discordant case falls either way with probability ½ (scipy's binomial test).
    ``None`` when no case is discordant: nothing to test."""
    from scipy.stats import binomtest

    discordant = only_a + only_b
    if discordant == 0:
        return None
    return float(binomtest(only_b, discordant, 0.5).pvalue)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm–Bonferroni adjusted p-values, in the order given (``None`` stays ``None``):
    each below α only if the family's error rate is held below α, whatever the
    dependence between its tests."""
    order = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(order)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def _measured(values: Iterable[float | None]) -> npt.NDArray[np.float64]:
    data = np.fromiter((v for v in values if v is not None), dtype=float)
    measured: npt.NDArray[np.float64] = data[~np.isnan(data)]
    return measured


def _two_samples(
    a: Iterable[float], b: Iterable[float]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    x, y = _measured(a), _measured(b)
    if x.size < 2 or y.size < 2 or (np.ptp(x) == 0 and np.ptp(y) == 0):
        return None
    return x, y


def _bootstrap(
    samples: tuple[npt.NDArray[np.float64], ...],
    statistic: Statistic,
    confidence: float,
    seed: int,
    resamples: int,
    method: BootstrapMethod,
) -> tuple[float, float] | None:
    from scipy.stats import bootstrap

    result = bootstrap(
        samples,
        statistic,
        vectorized=True,
        paired=False,
        confidence_level=confidence,
        n_resamples=resamples,
        method=method,
        rng=np.random.default_rng(seed),
    )
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    return low, high
