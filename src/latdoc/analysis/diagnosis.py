"""The diagnosis as data: kinds of slow, findings with evidence, remedies, the verdict.

Everything here is a frozen record built by pure functions from traces; the
report layer renders it and the store keeps it. Durations are milliseconds
unless a name says otherwise.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from latdoc.records import StepNote

CURVE_CONFIDENCE = 0.95
"""The confidence level of the length curve's intervals."""


class Kind(enum.StrEnum):
    """The closed set of answers to "which kind of slow is this?"."""

    NETWORK_SETUP = "network_setup"
    """DNS, TCP and TLS handshakes; connections not reused."""
    NETWORK_PATH = "network_path"
    """Round-trip time and bandwidth between client and server."""
    INPUT_LENGTH = "input_length"
    """Prefill that grows with the prompt."""
    QUEUEING = "queueing"
    """Server-side wait that follows load, not length."""
    DECODE = "decode"
    """Slow generation or long outputs."""
    STALLS = "stalls"
    """Pauses in the middle of a stream."""
    CLIENT = "client"
    """The client's own pool or event loop holds requests back."""
    ERRORS = "errors"
    """Rate limits, server errors, timeouts."""
    HEALTHY = "healthy"
    """Nothing above stands out."""


class Scenario(enum.StrEnum):
    """What the user optimises for (MISSION.md, cost–latency–quality)."""

    CHAT = "chat"
    """Real-time chat: latency first."""
    BATCH = "batch"
    """Batch analysis: cost first."""
    LONGDOC = "longdoc"
    """Long-document understanding: quality first, with long input."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One kind of slow that a rule detected, with the numbers that made it fire."""

    kind: Kind
    title: str
    rule: str
    """The rule that fired, in words, with its threshold."""
    evidence: Mapping[str, float]
    """The measured numbers the rule used (ms, ratios, counts)."""
    share_ms: float
    """Latency this kind adds to a typical request, in ms."""
    confidence: float
    """0..1: how sure the rule is (sample size, margin over the threshold)."""


@dataclass(frozen=True, slots=True)
class Remedy:
    """A concrete change, ranked for the scenario, with its predicted gain."""

    key: str
    title: str
    addresses: Kind
    change: str
    """What to change, phrased for httpx and the openai SDK."""
    predicted_gain_ms: float | None
    """Predicted TTFT or end-to-end saving per request; None when it cannot be predicted."""
    tradeoff: str | None = None
    """What it costs (quality, money, effort); set for trade-offs like a smaller model."""


@dataclass(frozen=True, slots=True)
class Verdict:
    primary: Kind
    contributing: tuple[Kind, ...]
    confidence: float


@dataclass(frozen=True, slots=True)
class LengthPoint:
    """TTFT at one prompt length: the median and the minimum over its requests.

    The minimum is the service time with the least queueing in it: under load
    that comes and goes, it is the one that shows what the length itself costs.
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
        return self.ttft_ms if self.min_ms is None else self.min_ms


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
    """``(a, b, c)`` refitted to bootstrap resamples of the requests at each length;
    the intervals are read from them. Empty when no length has two requests."""

    def predict_ms(self, prompt_tokens: float) -> float:
        k = prompt_tokens / 1000.0
        return self.a_ms + self.b_ms_per_1k * k + self.c_ms_per_1k2 * k * k

    def predict_interval_ms(self, prompt_tokens: float) -> tuple[float, float] | None:
        """The 95% bootstrap interval of :meth:`predict_ms`.

        An interval for the curve, the fastest TTFT at that length, not for one
        request's TTFT, which adds whatever queueing it meets. ``None`` when the
        curve was fitted from one request per length: there is nothing to resample.
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

        ``None`` when the curve was fitted from one request per length: there is
        nothing to resample.
        """
        if not self.draws:
            return None
        k = max(p.prompt_tokens for p in self.points) / 1000.0
        _, b, c = np.asarray(self.draws).T
        return _interval(b + 2 * c * k)

    @property
    def ratio_long_short(self) -> float:
        """Fastest TTFT at the longest length over the fastest at the shortest."""
        by_length = sorted(self.points, key=lambda p: p.prompt_tokens)
        return by_length[-1].best_ms / max(by_length[0].best_ms, 1e-9)


def _interval(draws: npt.NDArray[np.float64]) -> tuple[float, float]:
    tail = (1.0 - CURVE_CONFIDENCE) / 2
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class Diagnosis:
    """The answer: verdict, shares, findings, remedies, and the numbers behind them."""

    run_id: str
    endpoint: str
    model: str
    scenario: Scenario
    verdict: Verdict
    shares_ms: Mapping[Kind, float]
    findings: tuple[Finding, ...]
    remedies: tuple[Remedy, ...]
    network: Mapping[str, float | None]
    length: LengthCurve | None
    load: Mapping[str, float | None]
    notes: tuple[StepNote, ...] = ()
    requests: int = 0
    failed: int = 0
    extra: Mapping[str, object] = field(default_factory=dict)
