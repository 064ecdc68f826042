"""One definition of a percentile for all of latdoc: :func:`quantile` and :func:`quantiles`.

Every p50, p90, p95 and p99 latdoc reports, gates on or draws (a summary, a watch's
buckets, a regression gate, the length curve's band) is read here, by
:data:`QUANTILE_METHOD`. It is defined in the model, below the analysis, because the
length curve's band is drawn from its bootstrap draws here; the statistics policy
(:mod:`latdoc.analysis.policy`) and :mod:`latdoc.analysis.stats` re-export it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["QUANTILE_METHOD", "quantile", "quantiles"]

QUANTILE_METHOD: Final = "linear"
"""How a quantile is read between two ranks: the ``q`` quantile of n sorted values is
the value at rank (n − 1)·q, counted from 0, interpolated linearly between its two
neighbours (Hyndman and Fan's type 7: numpy's and R's default, and what
``statistics.quantiles(..., method="inclusive")`` gives). Its p50 is the median as
``statistics.median`` gives it."""


def quantile(sorted_data: npt.ArrayLike, q: float) -> float:
    """The ``q`` quantile (0 ≤ ``q`` ≤ 1) of the values, read by :data:`QUANTILE_METHOD`.

    The values need not be sorted; the name is kept for callers that pass it by keyword.
    """
    return float(quantiles(sorted_data, (q,))[0])


def quantiles(
    values: npt.ArrayLike, qs: Sequence[float], *, axis: int | None = None
) -> npt.NDArray[np.float64]:
    """The ``qs`` quantiles of ``values``, read by :data:`QUANTILE_METHOD`: one per ``q``,
    or with an ``axis`` one array per ``q`` of the quantiles along it."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("quantile of an empty sample")
    for q in qs:
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile {q} outside [0, 1]")
    return np.asarray(np.quantile(data, list(qs), axis=axis, method=QUANTILE_METHOD), dtype=float)
