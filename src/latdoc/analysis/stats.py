"""Summary statistics: one reusable :class:`Distribution` for every metric."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass


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
        """Summarise the measured values (``None`` entries are skipped)."""
        data = sorted(v for v in values if v is not None and not math.isnan(v))
        if not data:
            return None
        return cls(
            n=len(data),
            mean=statistics.fmean(data),
            stdev=statistics.stdev(data) if len(data) > 1 else None,
            min=data[0],
            p50=quantile(data, 0.50),
            p90=quantile(data, 0.90),
            p99=quantile(data, 0.99),
            max=data[-1],
        )


def quantile(sorted_data: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_data:
        raise ValueError("quantile of an empty sample")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    pos = (len(sorted_data) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_data) - 1)
    frac = pos - lo
    return sorted_data[lo] + (sorted_data[hi] - sorted_data[lo]) * frac
