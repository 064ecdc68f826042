"""Summary statistics: one reusable :class:`Distribution` for every metric, and intervals.

The intervals are percentile bootstraps (``scipy.stats.bootstrap``) seeded through a
numpy ``Generator``, so the same sample and seed give the same interval on every run.
A ratio of medians of large samples (:data:`LARGE_SAMPLE`) is bootstrapped from the
distribution of a resample's median instead (:func:`_resampled_medians`).
``scipy.stats`` is imported inside the functions that use it: importing it costs
about half a second, which ``import latdoc`` should not pay.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from latdoc.analysis.policy import CONFIDENCE, LARGE_SAMPLE, RESAMPLES

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
        p50, p90, p99 = np.quantile(data, [0.50, 0.90, 0.99])
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


def quantile(sorted_data: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method).

    The values need not be sorted; the name is kept for callers that pass it by keyword.
    """
    if len(sorted_data) == 0:
        raise ValueError("quantile of an empty sample")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    return float(np.quantile(np.asarray(sorted_data, dtype=float), q, method="linear"))


def bootstrap_ci(
    values: Iterable[float],
    statistic: Statistic = np.median,
    *,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    resamples: int = RESAMPLES,
    method: BootstrapMethod = "percentile",
) -> tuple[float, float] | None:
    """A bootstrap confidence interval for ``statistic`` of one sample.

    ``statistic`` must reduce along an ``axis`` keyword (``np.median``, ``np.mean``).
    ``None`` when there is nothing to resample: fewer than two values, or all equal.
    """
    data = _measured(values)
    if data.size < 2 or np.ptp(data) == 0:
        return None
    return _bootstrap((data,), statistic, confidence, seed, resamples, method)


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
    """A bootstrap confidence interval for ``median(a) − median(b)`` (or of another
    ``statistic``, e.g. ``np.mean``).

    Each sample is resampled on its own (the samples are independent, not paired).
    ``None`` when either sample has fewer than two values or both are constant.
    """

    def difference(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], axis: int) -> Any:
        return statistic(x, axis=axis) - statistic(y, axis=axis)

    samples = _two_samples(a, b)
    if samples is None:
        return None
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
    """A bootstrap confidence interval for ``median(a) / median(b)``: "a is r× b" (or of
    another ``statistic``, e.g. ``np.mean``).

    Each sample is resampled on its own (the samples are independent, not paired).
    ``None`` when either sample has fewer than two values, both are constant, or
    ``b``'s values are not all of one sign (a resample's median could be zero).
    """

    def ratio(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], axis: int) -> Any:
        return statistic(x, axis=axis) / statistic(y, axis=axis)

    samples = _two_samples(a, b)
    if samples is None or not (np.all(samples[1] > 0) or np.all(samples[1] < 0)):
        return None
    x, y = samples
    if statistic is np.median and method == "percentile" and max(x.size, y.size) >= LARGE_SAMPLE:
        rng = np.random.default_rng(seed)
        ratios = _resampled_medians(x, rng, resamples) / _resampled_medians(y, rng, resamples)
        tail = (1 - confidence) / 2 * 100
        low, high = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
        return (low, high) if np.isfinite(low) and np.isfinite(high) else None
    return _bootstrap(samples, ratio, confidence, seed, resamples, method)


def _resampled_medians(
    data: npt.NDArray[np.float64], rng: np.random.Generator, resamples: int
) -> npt.NDArray[np.float64]:
    """The medians of ``resamples`` bootstrap resamples of ``data``, drawn without resampling.

    Hand-written: ``scipy.stats.bootstrap`` draws every value of every resample
    (2,000 × 300,000 values for a watch of a million requests, gigabytes), and no library
    draws a median's bootstrap distribution directly. A resample of n values is
    ``sorted[ceil(n·U) - 1]`` for n uniform U, so its k-th smallest value is
    ``sorted[ceil(n·U₍ₖ₎) - 1]``, where the k-th smallest of n uniforms U₍ₖ₎ is
    Beta(k, n + 1 − k) and, given it, the next is U₍ₖ₎ + (1 − U₍ₖ₎)·Beta(1, n − k).
    The medians drawn so have exactly the distribution of resampled medians.
    """
    ordered = np.sort(data)
    n = ordered.size
    k = (n + 1) // 2
    low = rng.beta(k, n + 1 - k, size=resamples)
    first = ordered[np.clip(np.ceil(low * n).astype(np.int64), 1, n) - 1]
    if n % 2:
        return first
    high = low + (1 - low) * rng.beta(1, n - k, size=resamples)
    second = ordered[np.clip(np.ceil(high * n).astype(np.int64), 1, n) - 1]
    medians: npt.NDArray[np.float64] = (first + second) / 2
    return medians


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
