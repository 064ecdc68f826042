"""How the time to first token grows with the prompt: the measured points and the
fitted curve with its bootstrap draws (fitted by :mod:`latdoc.analysis.length`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from latdoc.model.percentile import quantiles

__all__ = ["CURVE_CONFIDENCE", "LengthCurve", "LengthPoint"]

CURVE_CONFIDENCE = 0.95
"""The confidence level of the length curve's intervals."""


@dataclass(frozen=True, slots=True)
class LengthPoint:
    """TTFT at one prompt length: the median and the minimum over its requests.

    The curve and the length rule read the median (:attr:`best_ms`): the fastest of
    a few requests runs short of the typical one by the jitter, at every length, and
    so reads less growth than there is; one busy moment moves a median of three or
    more not at all. The minimum is kept for the record.
    """

    prompt_tokens: int
    ttft_ms: float
    n: int
    min_ms: float | None = None
    values_ms: tuple[float, ...] = ()
    """Every TTFT measured at this length, in the order measured; the bootstrap
    resamples them. Empty when only the summary is known."""

    @property
    def best_ms(self) -> float:
        """The value the curve is fitted to: the median."""
        return self.ttft_ms


@dataclass(frozen=True, slots=True)
class LengthCurve:
    """How TTFT grows with the prompt: ``a + b·k + c·k²`` for k thousand tokens."""

    points: tuple[LengthPoint, ...]
    a_ms: float
    b_ms_per_1k: float
    c_ms_per_1k2: float
    shape: str
    """``flat``, ``linear`` or ``super-linear``."""
    draws: tuple[tuple[float, float, float], ...] = field(default=(), repr=False)
    """``(a, b, c)`` refitted to each length's median drawn again with the run's jitter
    (:mod:`latdoc.analysis.length`); the intervals are read from them. Empty when no
    length has two requests to read the jitter from."""
    tokens_estimated: bool = False
    """The prompt tokens are estimates from the prompts' characters (recorded traffic
    whose server reported no usage), not the server's counts."""

    def predict_ms(self, prompt_tokens: float) -> float:
        k = prompt_tokens / 1000.0
        return self.a_ms + self.b_ms_per_1k * k + self.c_ms_per_1k2 * k * k

    def predict_interval_ms(self, prompt_tokens: float) -> tuple[float, float] | None:
        """The 95% bootstrap interval of :meth:`predict_ms`.

        An interval for the curve, the median TTFT at that length, not for one
        request's TTFT, which adds whatever queueing it meets. ``None`` when no length
        had two requests to read the jitter from.
        """
        if not self.draws:
            return None
        k = prompt_tokens / 1000.0
        a, b, c = np.asarray(self.draws).T
        return _interval(a + b * k + c * k * k)

    @property
    def prefill_ms_per_1k(self) -> float:
        """The marginal prefill rate at the longest measured length, ms per 1K tokens."""
        k = max(p.prompt_tokens for p in self.points) / 1000.0
        return self.b_ms_per_1k + 2 * self.c_ms_per_1k2 * k

    @property
    def prefill_interval_ms_per_1k(self) -> tuple[float, float] | None:
        """The 95% bootstrap interval of :attr:`prefill_ms_per_1k`.

        ``None`` when no length had two requests to read the jitter from.
        """
        if not self.draws:
            return None
        k = max(p.prompt_tokens for p in self.points) / 1000.0
        _, b, c = np.asarray(self.draws).T
        return _interval(b + 2 * c * k)

    def difference_interval_ms(
        self, long_tokens: float, short_tokens: float
    ) -> tuple[float, float] | None:
        """The 95% bootstrap interval of ``predict_ms(long) − predict_ms(short)``:
        what trimming a prompt from ``long_tokens`` to ``short_tokens`` saves."""
        if not self.draws:
            return None
        _, b, c = np.asarray(self.draws).T
        k1, k2 = long_tokens / 1000.0, short_tokens / 1000.0
        return _interval(b * (k1 - k2) + c * (k1 * k1 - k2 * k2))

    def band_ms(self, prompt_tokens: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], ...] | None:
        """Lower and upper 95% bounds of the curve at each length; None without draws."""
        if not self.draws:
            return None
        k = np.asarray(prompt_tokens, dtype=float)[None, :] / 1000.0
        a, b, c = (col[:, None] for col in np.asarray(self.draws).T)
        tail = (1.0 - CURVE_CONFIDENCE) / 2
        low, high = quantiles(a + b * k + c * k * k, (tail, 1.0 - tail), axis=0)
        return low, high

    @property
    def ratio_long_short(self) -> float:
        """Median TTFT at the longest length over the median at the shortest."""
        by_length = sorted(self.points, key=lambda p: p.prompt_tokens)
        return by_length[-1].best_ms / max(by_length[0].best_ms, 1e-9)


def _interval(draws: npt.NDArray[np.float64]) -> tuple[float, float]:
    tail = (1.0 - CURVE_CONFIDENCE) / 2
    low, high = quantiles(draws, (tail, 1.0 - tail))
    return float(low), float(high)
