"""The TTFT-vs-prompt-length curve: a least-squares fit of ``a + b·k + c·k²`` (k = 1K tokens).

The seed's method: hold the output fixed, measure TTFT at growing input lengths and
draw the curve. Its shape says which serving the endpoint has: ``flat`` (TTFT hardly
moves), ``linear`` (FlashAttention/PagedAttention-style prefill) or ``super-linear``
(attention cost growing with the square of the input, or memory pressure). The fit
uses the fastest TTFT at each length, the one with the least queueing in it.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence

from latdoc.analysis.diagnosis import LengthCurve, LengthPoint

FLAT_GROWTH = 1.5
"""Below this TTFT(longest) / TTFT(shortest), the curve is flat."""
SUPERLINEAR_SHARE = 0.25
"""The quadratic term's share of the growth at the longest length above which the
curve is super-linear."""


def length_points(pairs: Iterable[tuple[int, float]]) -> tuple[LengthPoint, ...]:
    """Median TTFT per prompt length from (prompt tokens, TTFT ms) pairs."""
    by_length: dict[int, list[float]] = defaultdict(list)
    for tokens, ttft in pairs:
        by_length[tokens].append(ttft)
    return tuple(
        LengthPoint(prompt_tokens=n, ttft_ms=statistics.median(v), n=len(v), min_ms=min(v))
        for n, v in sorted(by_length.items())
    )


def fit_length_curve(points: Sequence[LengthPoint]) -> LengthCurve | None:
    """Fit the curve to two or more lengths; ``None`` with fewer."""
    pts = sorted(points, key=lambda p: p.prompt_tokens)
    if len({p.prompt_tokens for p in pts}) < 2:
        return None
    ks = [p.prompt_tokens / 1000.0 for p in pts]
    ys = [p.best_ms for p in pts]
    weights = [float(p.n) for p in pts]
    a, b, c = 0.0, 0.0, 0.0
    if len(pts) >= 3:
        a, b, c = _least_squares(ks, ys, weights, degree=2)
    if len(pts) < 3 or c < 0 or b < 0:
        a, b = _least_squares(ks, ys, weights, degree=1)[:2]
        c = 0.0
    if b < 0:
        a, b = statistics.fmean(ys), 0.0
    shape = _shape(pts, b, c)
    return LengthCurve(points=tuple(pts), a_ms=a, b_ms_per_1k=b, c_ms_per_1k2=c, shape=shape)


def _shape(points: Sequence[LengthPoint], b: float, c: float) -> str:
    short, long = points[0], points[-1]
    if long.best_ms / max(short.best_ms, 1e-9) < FLAT_GROWTH:
        return "flat"
    k = long.prompt_tokens / 1000.0
    growth = b * k + c * k * k
    if growth > 0 and c * k * k / growth >= SUPERLINEAR_SHARE:
        return "super-linear"
    return "linear"


def _least_squares(
    xs: Sequence[float], ys: Sequence[float], ws: Sequence[float], *, degree: int
) -> tuple[float, float, float]:
    """Weighted polynomial least squares through the normal equations."""
    size = degree + 1
    matrix = [[0.0] * size for _ in range(size)]
    rhs = [0.0] * size
    for x, y, w in zip(xs, ys, ws, strict=True):
        powers = [x**i for i in range(size)]
        for i in range(size):
            rhs[i] += w * powers[i] * y
            for j in range(size):
                matrix[i][j] += w * powers[i] * powers[j]
    coeffs = _solve(matrix, rhs)
    coeffs += [0.0] * (3 - len(coeffs))
    return coeffs[0], coeffs[1], coeffs[2]


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting; singular systems give zeros."""
    n = len(rhs)
    m = [[*row, rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            return [0.0] * n
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                for c in range(col, n + 1):
                    m[r][c] -= f * m[col][c]
    return [m[i][n] / m[i][i] for i in range(n)]
