"""Signals in a set of traces: dispersion, mid-stream stalls, and the robust statistics they use."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from latdoc.analysis.stats import quantile

MAD_TO_SIGMA = 1.4826
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
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    if mad == 0:
        return 0.0 if x == med else float("inf")
    return 0.6745 * (x - med) / mad


def find_stalls(itl_ms: Sequence[float]) -> list[Stall]:
    """Inter-token gaps far above the stream's own rhythm."""
    if len(itl_ms) < 4:
        return []
    med = statistics.median(itl_ms)
    stalls = []
    for k, gap in enumerate(itl_ms):
        if gap < STALL_MIN_MS or gap < STALL_MIN_RATIO * med:
            continue
        if modified_z(itl_ms, gap) > STALL_Z:
            stalls.append(Stall(after_token=k + 1, gap_ms=gap))
    return stalls


def dispersion(values: Sequence[float]) -> Dispersion | None:
    data = sorted(values)
    if len(data) < 2:
        return None
    mean = statistics.fmean(data)
    p50 = quantile(data, 0.5)
    return Dispersion(
        n=len(data),
        median=p50,
        cv=statistics.stdev(data) / mean if mean > 0 else 0.0,
        p95_over_p50=quantile(data, 0.95) / p50 if p50 > 0 else 0.0,
    )
