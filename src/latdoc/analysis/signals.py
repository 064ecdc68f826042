"""Signals in a set of traces: dispersion, mid-stream stalls, and the robust statistics they use."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from latdoc.analysis.stats import quantiles

STALL_Z = 3.5
"""Modified z-score (Iglewicz and Hoaglin) above which a gap is an outlier."""
STALL_MIN_RATIO = 5.0
"""A stall is also at least this many times the median inter-token gap ..."""
STALL_MIN_MS = 100.0
"""... and at least this long, so jitter on a fast stream is never a stall."""


@dataclass(frozen=True, slots=True)
class Stall:
    after_token: int
    """The stream paused after this many content chunks."""
    gap_ms: float


@dataclass(frozen=True, slots=True)
class Dispersion:
    """How much one metric varies across repeats of the same request."""

    n: int
    median: float
    cv: float
    """Coefficient of variation: stdev / mean."""
    p95_over_p50: float


def modified_z(values: Sequence[float], x: float) -> float:
    """MAD-based z-score of ``x`` against ``values`` (0 when the MAD is 0 and x is the median)."""
    data = np.asarray(values, dtype=float)
    return float(_modified_z(data, np.array([x]))[0])


def find_stalls(itl_ms: Sequence[float]) -> list[Stall]:
    """Inter-token gaps far above the stream's own rhythm.

    The rhythm is read between the reads that brought events: events a hop passed on
    together arrive in one read, a gap of 0 each, and against a median of 0 every
    pause between two bursts was a stall (a hop holding four events of 25 ms a token
    made a 100 ms "stall" of every burst)."""
    if len(itl_ms) < 4:
        return []
    gaps = np.asarray(itl_ms, dtype=float)
    reads = gaps[gaps > 0]
    rhythm = reads if reads.size >= 4 and reads.size < gaps.size else gaps
    med = np.median(rhythm)
    stall = (
        (gaps >= STALL_MIN_MS)
        & (gaps >= STALL_MIN_RATIO * med)
        & (_modified_z(rhythm, gaps) > STALL_Z)
    )
    return [Stall(after_token=int(k) + 1, gap_ms=float(gaps[k])) for k in np.flatnonzero(stall)]


def _modified_z(
    values: npt.NDArray[np.float64], xs: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Iglewicz and Hoaglin's modified z-score of each of ``xs``: the distance from the
    median of ``values`` in units of their MAD scaled to a normal σ (MAD × 1.4826)."""
    from scipy.stats import median_abs_deviation

    med = np.median(values)
    mad = float(median_abs_deviation(values, scale="normal"))
    if mad == 0:
        return np.where(xs == med, 0.0, np.inf)
    z: npt.NDArray[np.float64] = (xs - med) / mad
    return z


def dispersion(values: Sequence[float]) -> Dispersion | None:
    data = np.asarray(values, dtype=float)
    if data.size < 2:
        return None
    mean = float(np.mean(data))
    p50, p95 = (float(q) for q in quantiles(data, (0.5, 0.95)))
    return Dispersion(
        n=int(data.size),
        median=p50,
        cv=float(np.std(data, ddof=1)) / mean if mean > 0 else 0.0,
        p95_over_p50=p95 / p50 if p50 > 0 else 0.0,
    )
