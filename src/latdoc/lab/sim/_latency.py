"""How slow the simulated server is: :class:`LatencyModel`, in milliseconds (prefill by
prompt length, decode per token, KV-cache pressure, the output reservation, reasoning,
continuous batching), and the checks every numeric knob of the lab's configuration
passes (:mod:`._config` reads them too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["LatencyModel", "check_at_least", "check_finite", "check_rate"]


def check_finite(owner: object, names: tuple[str, ...], *, positive: bool = False) -> None:
    for name in names:
        value = getattr(owner, name)
        ok = math.isfinite(value) and (value > 0 if positive else value >= 0)
        if not ok:
            bound = "> 0" if positive else ">= 0"
            raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")


def check_rate(owner: object, name: str) -> None:
    value = getattr(owner, name)
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise ValueError(f"{name} must be between 0 and 1, got {value!r}")


def check_at_least(owner: object, name: str, minimum: int) -> None:
    value = getattr(owner, name)
    if value is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


@dataclass(frozen=True)
class LatencyModel:
    """The simulated server's timing, in milliseconds.

    Prefill of ``n`` prompt tokens takes ``prefill_base_ms + prefill_ms_per_token·n
    + prefill_ms_per_token2·n²``; each later output token follows the previous one
    by ``decode_ms_per_token``. With ``jitter_ms`` > 0, a uniform draw from
    ``[-jitter_ms, +jitter_ms]`` is added to the prefill and to every token gap, each
    clipped at 0.

    KV-cache pressure: when ``kv_threshold_tokens`` is set, a request whose context
    exceeds it is ``kv_penalty`` times slower. The context is the prompt during
    prefill and prompt + tokens generated so far during decode, so a prompt over the
    threshold has its prefill and every token gap multiplied, and a prompt under it
    streams at full speed until its context crosses the threshold mid-answer.

    Reservation: before its prefill a request waits ``reserve_ms_per_1k_max_tokens``
    for every 1000 tokens of the output limit it asked for (:meth:`reserve_ms`; a
    request that names none is charged for the limit it gets), as a server that sets
    aside KV-cache memory for the whole limit up front. It is exact (no jitter, no
    KV penalty) and reported apart from the prefill.

    Reasoning: a model with ``reasoning_tokens`` > 0 thinks that many tokens before
    its answer at the default (medium) effort, streamed as reasoning (chat's
    ``reasoning_content``, Anthropic's thinking, a Responses reasoning summary) at
    ``decode_ms_per_token`` each, and reported in the usage as output tokens of
    which that many are reasoning. The request's effort scales it
    (:func:`~latdoc.lab.sim.dialects._stand_in.effort_tokens`): ``minimal``/``none`` 0,
    ``low`` ¼, ``medium`` 1, ``high`` 2 times; Anthropic's ``thinking`` budget caps it
    and ``{"type": "disabled"}`` turns it off. Thinking does not count against the
    answer's output limit.

    Continuous batching: with ``batch_slowdown`` > 0 decode slows with the streams in
    flight. Each token gap is ``decode_ms_per_token·(1 + batch_slowdown·(n − 1))``
    (then KV-penalised and jittered as above), where ``n`` is the number of streams
    decoding when the gap starts: requests of any model between their first and last
    token, this one included, and the background requests holding slots
    (``LabConfig.load_profile``). A streamed answer reads ``n`` at each event it
    writes (for the tokens up to its next event), a whole answer once, at its first
    token. ``0`` (the default): every stream decodes at full speed.
    """

    prefill_base_ms: float = 20.0
    prefill_ms_per_token: float = 0.05
    prefill_ms_per_token2: float = 0.0
    decode_ms_per_token: float = 10.0
    jitter_ms: float = 0.0
    kv_threshold_tokens: int | None = None
    kv_penalty: float = 1.0
    reserve_ms_per_1k_max_tokens: float = 0.0
    reasoning_tokens: int = 0
    batch_slowdown: float = 0.0

    def __post_init__(self) -> None:
        check_finite(
            self,
            (
                "prefill_base_ms",
                "prefill_ms_per_token",
                "prefill_ms_per_token2",
                "decode_ms_per_token",
                "jitter_ms",
                "reserve_ms_per_1k_max_tokens",
                "batch_slowdown",
            ),
        )
        check_finite(self, ("kv_penalty",), positive=True)
        check_at_least(self, "kv_threshold_tokens", 0)
        check_at_least(self, "reasoning_tokens", 0)

    def batch_factor(self, decoding: int) -> float:
        """How much slower each token gap is with ``decoding`` streams decoding at once
        (this one among them): ``1 + batch_slowdown·(decoding − 1)``."""
        return 1.0 + self.batch_slowdown * max(0, decoding - 1)

    def over_threshold(self, context_tokens: int) -> bool:
        """Whether a context of ``context_tokens`` is past the KV-cache threshold."""
        threshold = self.kv_threshold_tokens
        return threshold is not None and context_tokens > threshold

    def reserve_ms(self, max_tokens: int) -> float:
        """Time reserving room for ``max_tokens`` output tokens, before the prefill."""
        return self.reserve_ms_per_1k_max_tokens * max_tokens / 1000

    def prefill_ms(self, prompt_tokens: int, cached_tokens: int = 0) -> float:
        """Planned prefill time (time to first token) for ``prompt_tokens``, no jitter.

        With ``cached_tokens`` of the prompt's prefix already in the prefix cache only
        the rest is computed: ``a + b·(n − c) + q·(n² − c²)`` (the new tokens still
        attend to the cached ones).
        """
        n, c = prompt_tokens, cached_tokens
        b, q = self.prefill_ms_per_token, self.prefill_ms_per_token2
        ms = self.prefill_base_ms + b * n + q * n * n - (b * c + q * c * c)
        return ms * self.kv_penalty if self.over_threshold(n) else ms

    def first_slow_token(self, prompt_tokens: int) -> int | None:
        """The first output token whose gap is KV-penalised, or ``None`` for none.

        Token ``k`` (from 0) is produced with a context of ``prompt_tokens + k``; the
        gap before it is penalised when that context is past the threshold.
        """
        threshold = self.kv_threshold_tokens
        if threshold is None or self.kv_penalty == 1.0:
            return None
        return max(1, threshold - prompt_tokens + 1)

    def total_ms(self, prompt_tokens: int, output_tokens: int) -> float:
        """Planned time from the prefill's start to the last output token, no jitter.

        The reservation comes before it: add :meth:`reserve_ms` of the request's
        output limit for the time from the request.
        """
        gaps = max(output_tokens - 1, 0)
        decode = gaps * self.decode_ms_per_token
        slow = self.first_slow_token(prompt_tokens)
        if slow is not None and gaps >= slow:
            decode += (gaps - slow + 1) * self.decode_ms_per_token * (self.kv_penalty - 1)
        return self.prefill_ms(prompt_tokens) + decode
