"""The TTFT-vs-prompt-length curve: a least-squares fit of ``a + b·k + c·k²`` (k = 1K tokens).

The seed's method: hold the output fixed, measure TTFT at growing input lengths and
draw the curve. Its shape says which serving the endpoint has: ``flat`` (TTFT hardly
moves), ``linear`` (FlashAttention/PagedAttention-style prefill) or ``super-linear``
(attention cost growing with the square of the input, or memory pressure). The fit
reads the median TTFT at each length, weighted by its requests and by its relative
error, since a request's jitter is a share of its time: a 30 s prefill varies by
seconds where a 200 ms one varies by tens of ms.

Its intervals come from a parametric bootstrap: each length's median is drawn again
as the median of as many requests with the run's own jitter around the fitted curve,
and the curve refitted, a few hundred times with a fixed seed, so the same
measurements always give the same interval. The jitter is the pooled standard
deviation (in logs) of the requests at each length that has two or more (at the
shortest, the other steps' requests sent alone give seven to nine); each refit
draws its own jitter from the estimate's χ² spread, so a jitter read from a few
requests widens the interval. Resampling the requests at each length instead (with
one or two per length) gave intervals that held the true prefill rate in 85–90% of
runs; this one holds it 94–97% of the time at jitter from 3% to 25%, and the trim
gain 94–95% (``tests/unit/analysis/test_analysis.py``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from latdoc.analysis.policy import LENGTH_RESAMPLES
from latdoc.model import LengthCurve, LengthPoint

FLAT_GROWTH = 1.5
"""Below this TTFT(longest) / TTFT(shortest), the curve is flat."""
SUPERLINEAR_SHARE = 0.25
"""The quadratic term's share of the growth at the longest length above which the
curve is super-linear."""
RESAMPLES = LENGTH_RESAMPLES
"""Bootstrap refits behind the curve's intervals (the policy's)."""

Array = npt.NDArray[np.float64]


def length_points(pairs: Iterable[tuple[int, float]]) -> tuple[LengthPoint, ...]:
    """Median TTFT per prompt length from (prompt tokens, TTFT ms) pairs."""
    by_length: dict[int, list[float]] = defaultdict(list)
    for tokens, ttft in pairs:
        by_length[tokens].append(ttft)
    return tuple(
        LengthPoint(
            prompt_tokens=n,
            ttft_ms=statistics.median(v),
            n=len(v),
            min_ms=min(v),
            values_ms=tuple(v),
        )
        for n, v in sorted(by_length.items())
    )


def fit_length_curve(
    points: Sequence[LengthPoint], *, resamples: int = RESAMPLES, seed: int = 0
) -> LengthCurve | None:
    """Fit the curve to two or more lengths; ``None`` with fewer.

    The curve carries ``resamples`` bootstrap refits for its intervals; it has none
    (and its intervals are ``None``) when no length has enough requests to read the
    jitter from.
    """
    pts = sorted(points, key=lambda p: p.prompt_tokens)
    if len({p.prompt_tokens for p in pts}) < 2:
        return None
    ks = np.array([p.prompt_tokens / 1000.0 for p in pts])
    ys = np.array([p.best_ms for p in pts])
    weights = np.sqrt([float(p.n) for p in pts]) / np.maximum(ys, 1e-9)
    quadratic = len(pts) >= 3
    a, b, c = (float(x) for x in _fit(ks, ys[:, None], weights, quadratic=quadratic)[:, 0])
    draws: tuple[tuple[float, float, float], ...] = ()
    sigma = jitter(pts)
    if sigma is not None and resamples >= 1:
        fitted = np.maximum(a + b * ks + c * ks * ks, 1e-9)
        simulated = _simulate(fitted, [p.n for p in pts], sigma, resamples, seed)
        coefficients = _fit(ks, simulated, weights, quadratic=quadratic)
        draws = tuple((float(x), float(y), float(z)) for x, y, z in coefficients.T)
    return LengthCurve(
        points=tuple(pts),
        a_ms=a,
        b_ms_per_1k=b,
        c_ms_per_1k2=c,
        shape=_shape(pts, b, c),
        draws=draws,
    )


@dataclass(frozen=True, slots=True)
class Jitter:
    """The spread of log TTFT between requests of one length, and its degrees of freedom."""

    sigma: float
    df: int


def jitter(points: Sequence[LengthPoint]) -> Jitter | None:
    """The requests' relative jitter: the pooled standard deviation of log TTFT about
    each length's mean, over the lengths with two requests or more; None when no length
    has two. Busy moments some requests met are in it: they widen the intervals,
    never narrow them. Setting the slowest aside (three scaled MADs above the median)
    read the jitter short on a handful of requests."""
    squares, df = 0.0, 0
    for p in points:
        logs = np.log(np.maximum(np.asarray(p.values_ms, dtype=float), 1e-9))
        if logs.size < 2:
            continue
        squares += float(np.sum((logs - logs.mean()) ** 2))
        df += logs.size - 1
    if df < 1:
        return None
    return Jitter(float(np.sqrt(squares / df)), df)


def _simulate(
    fitted: Array, counts: Sequence[int], spread: Jitter, resamples: int, seed: int
) -> Array:
    """``resamples`` columns of each length's median drawn again: the median of as many
    requests as it had, each the fitted TTFT times its jitter. Each column draws its
    own jitter first, as its estimate from ``df`` degrees of freedom may be (a scaled
    χ²), so a jitter read from a few requests widens the interval as it should."""
    rng = np.random.default_rng(seed)
    sigmas = spread.sigma * np.sqrt(spread.df / rng.chisquare(spread.df, size=resamples))
    rows = []
    for centre, n in zip(fitted, counts, strict=True):
        noise = rng.normal(0.0, 1.0, size=(resamples, max(1, n))) * sigmas[:, None]
        rows.append(centre * np.exp(np.median(noise, axis=1)))
    return np.stack(rows)


def _fit(ks: Array, ys: Array, weights: Array, *, quadratic: bool) -> Array:
    """``(a, b, c)`` for each column of ``ys`` (one TTFT per length in each column).

    Weighted least squares with neither the linear nor the quadratic term negative (a
    prefill never gets cheaper as the prompt grows): the full quadratic where both its
    terms are, else the better of ``a + c·k²`` and ``a + b·k`` whose term is (the
    least-squares fit under the bounds lies on one of those faces), and a flat mean
    when neither is. The quadratic needs three lengths. A line alone where a prompt's
    cost grows with its square read 8K tokens at 60% of its measured TTFT.
    """
    columns = [np.ones_like(ks), ks, ks * ks]
    shapes = [(0, 1, 2), (0, 2), (0, 1)] if quadratic else [(0, 1)]
    best = np.full(ys.shape[1], np.inf)
    out = np.zeros((3, ys.shape[1]))
    for used in shapes:
        design = np.stack([columns[i] for i in used], axis=1) * weights[:, None]
        solved = np.linalg.lstsq(design, ys * weights[:, None], rcond=None)[0]
        coefficients = np.zeros((3, ys.shape[1]))
        coefficients[list(used)] = solved
        residual = ((design @ solved - ys * weights[:, None]) ** 2).sum(axis=0)
        valid = (coefficients[1] >= 0) & (coefficients[2] >= 0) & (residual < best)
        out = np.where(valid, coefficients, out)
        best = np.where(valid, residual, best)
    flat = ~np.isfinite(best)
    out[0] = np.where(flat, ys.mean(axis=0), out[0])
    return out


def _shape(points: Sequence[LengthPoint], b: float, c: float) -> str:
    short, long = points[0], points[-1]
    if long.best_ms / max(short.best_ms, 1e-9) < FLAT_GROWTH:
        return "flat"
    k = long.prompt_tokens / 1000.0
    growth = b * k + c * k * k
    if growth > 0 and c * k * k / growth >= SUPERLINEAR_SHARE:
        return "super-linear"
    return "linear"
