"""A measured request with the reason it was sent: which step, at what length and load."""

from __future__ import annotations

from dataclasses import dataclass

from latdoc.probe.trace import RequestTrace


@dataclass(frozen=True, slots=True)
class Sample:
    """One trace of a diagnosis run, labelled with the step and conditions that produced it."""

    step: str
    """``calibration``, ``network``, ``length`` or ``load``."""
    trace: RequestTrace
    target_prompt_tokens: int | None = None
    """The prompt length asked for (the trace holds what the endpoint counted)."""
    concurrency: int = 1
    """How many requests were in flight together when this one was sent."""
    cold: bool = False
    """Sent on a new connection on purpose (network step)."""
    index: int = 0
    """Order within the run."""
    loop_lag_ms: float | None = None
    """How late the measuring client's event loop ran at worst during this request."""
