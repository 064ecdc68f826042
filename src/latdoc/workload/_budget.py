"""Hard caps on what a run may spend: requests, tokens, seconds.

Every request is reserved before it is sent, at its worst case (the prompt plus
the full ``max_tokens`` of output), so the caps are never exceeded, whatever the
endpoint answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from latdoc.errors import UsageError


@dataclass
class Budget:
    """Hard caps on requests, tokens and seconds: each request is reserved before it is
    sent, so a run never passes them."""

    max_requests: int
    token_budget: int | None = None
    """Prompt plus output tokens over the whole run; ``None`` for no cap."""
    max_seconds: float | None = None
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    requests: int = 0
    tokens: int = 0
    started: float = field(default=0.0)

    def __post_init__(self) -> None:
        if self.max_requests < 1:
            raise UsageError("--max-requests must be at least 1")
        if self.token_budget is not None and self.token_budget < 1:
            raise UsageError("--token-budget must be at least 1")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise UsageError("--max-seconds must be more than 0")
        self.started = self.clock()

    def can_afford(self, prompt_tokens: int, output_tokens: int, count: int = 1) -> bool:
        if self.requests + count > self.max_requests:
            return False
        cost = (prompt_tokens + output_tokens) * count
        return self.token_budget is None or self.tokens + cost <= self.token_budget

    def reserve(self, prompt_tokens: int, output_tokens: int) -> bool:
        """Count one request at its worst case; False (and nothing counted) if it would not fit."""
        if not self.can_afford(prompt_tokens, output_tokens):
            return False
        self.requests += 1
        self.tokens += prompt_tokens + output_tokens
        return True

    def count_resend(self) -> bool:
        """Count a second attempt of a request already reserved, if one more request fits.

        Its tokens are not counted again: an attempt that is resent ended before the
        endpoint generated anything, and the reservation still covers the second."""
        if self.requests >= self.max_requests:
            return False
        self.requests += 1
        return True

    def settle(self, reserved_tokens: int, actual_tokens: int) -> None:
        """Count what a request really cost instead of its reservation."""
        self.tokens += actual_tokens - reserved_tokens

    @property
    def seconds_left(self) -> float:
        if self.max_seconds is None:
            return float("inf")
        return self.max_seconds - (self.clock() - self.started)

    @property
    def requests_left(self) -> int:
        return self.max_requests - self.requests
