"""What a diagnosis plans to send: the prompt lengths of the TTFT curve, the requests
each step sends and the margins its time is checked with (:mod:`._steps` sends them),
the :class:`DiagnosisPlan` a run is given, and the most the full plan sends and spends
when no budget stops it and no step settles early (:func:`planned_requests`,
:func:`planned_tokens`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from latdoc.analysis.kinds.input_length import LONG_REFERENCE_TOKENS
from latdoc.model import DEFAULT_CONCURRENCY, Price, planned_cost
from latdoc.probe import ConnectionOptions, Endpoint
from latdoc.workload._calibration import ASSUMED, TokenCalibration, calibration_words, prompt_cost

LENGTHS = (128, 512, 2048, 8192, 32768)
"""The seed's lengths for the TTFT curve."""
SHORT_TOKENS = LENGTHS[0]
"""The network and load steps' prompt: the curve's first length."""
LENGTH_ORDER = (LONG_REFERENCE_TOKENS, *(n for n in LENGTHS[1:] if n != LONG_REFERENCE_TOKENS))
"""The lengths the length step sends, the rule's reference first so a run cut short by
its budget still has the rule's two points."""
CALIBRATION_NEAR_TOKENS = 256
WARM_REQUESTS = 3
EXTRA_COLD = 3
RESUMED_TLS = 1
"""The network step's cold request that offers the first connection's TLS session."""
"""With the first cold request and the load step's first sequential one, five new
connections: the fewest an interval of their median (keep-alive's saving, the setup
every request pays) is given from (the policy's ``MIN_INTERVAL_N``)."""
SEQUENTIAL_REPEATS = 3
REFERENCE_REPEATS = 1
"""Requests at the reference length beyond the first when it does not settle the rule."""
LENGTH_TIME_SHARE = 0.6
"""Of the time left after the network step, what the length step may use."""
SAFETY = 1.5
"""Predicted durations are multiplied by this before checking they fit."""


@dataclass(frozen=True)
class DiagnosisPlan:
    """What a diagnosis sends: the endpoint, the output length, the budget, and the
    concurrency the load step sends and the pool is sized for."""

    endpoint: Endpoint
    connection: ConnectionOptions = field(default_factory=ConnectionOptions)
    max_tokens: int = 32
    """``max_tokens`` of each request: the output length."""
    max_requests: int = 40
    token_budget: int | None = None
    """Prompt plus output tokens over the whole run; ``None`` for no cap."""
    max_seconds: float = 120.0
    context_window: int | None = None
    seed: int | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    """Requests the load step sends at once (fewer when the budget affords fewer)."""
    max_cost: float | None = None
    """Dollars the run may spend, counted at :attr:`price`; ``None`` for no cap."""
    price: Price | None = None
    """The model's price, where latdoc's price library knows it or the user gave it."""


def planned_requests(concurrency: int = DEFAULT_CONCURRENCY) -> int:
    """Requests the full plan sends at most (over TLS) when no budget stops it and no step
    settles early."""
    short = 1 + WARM_REQUESTS + RESUMED_TLS + EXTRA_COLD + SEQUENTIAL_REPEATS + concurrency
    return 2 + short + len(LENGTH_ORDER) + REFERENCE_REPEATS


@dataclass(frozen=True, slots=True)
class PlannedSend:
    """Requests the full plan may send alike: how many, for which step, and the prompt
    and output tokens each is reserved at."""

    step: str
    requests: int
    prompt_tokens: int
    output_tokens: int


def planned_sends(
    max_tokens: int, context_window: int | None = None, concurrency: int = DEFAULT_CONCURRENCY
) -> list[PlannedSend]:
    """Every request the full plan may send, at the bounds it reserves them at."""
    sends = [
        PlannedSend("calibration", 1, prompt_cost(ASSUMED, w), 1)
        for w in calibration_words(CALIBRATION_NEAR_TOKENS)
    ]
    per_token = TokenCalibration(overhead=0.0, per_word=1.0, measured=True)
    short = prompt_cost(per_token, SHORT_TOKENS)
    network = 1 + WARM_REQUESTS + RESUMED_TLS + EXTRA_COLD
    sends.append(PlannedSend("network", network, short, max_tokens))
    for n in LENGTH_ORDER:
        if context_window is None or n <= context_window:
            asked = 1 + (REFERENCE_REPEATS if n == LONG_REFERENCE_TOKENS else 0)
            sends.append(PlannedSend(f"length {n:,}", asked, prompt_cost(per_token, n), max_tokens))
    sends.append(PlannedSend("load", SEQUENTIAL_REPEATS + concurrency, short, max_tokens))
    return sends


def planned_tokens(
    max_tokens: int, context_window: int | None = None, concurrency: int = DEFAULT_CONCURRENCY
) -> int:
    """Prompt + output tokens the full plan may spend, at the bounds it reserves."""
    return sum(
        s.requests * (s.prompt_tokens + s.output_tokens)
        for s in planned_sends(max_tokens, context_window, concurrency)
    )


def planned_spend(plan: DiagnosisPlan) -> float | None:
    """Dollars the full plan may spend at its price, at the bounds it reserves, before
    ``max_cost`` cuts it; ``None`` without a price."""
    if plan.price is None:
        return None
    sends = planned_sends(plan.max_tokens, plan.context_window, plan.concurrency)
    return sum(
        s.requests * planned_cost(plan.price, s.prompt_tokens, s.output_tokens) for s in sends
    )
