"""Hard caps on what a run may spend: requests, tokens, seconds and money.

Every request is reserved before it is sent, at its worst case (the prompt plus
the full ``max_tokens`` of output), so the caps are never exceeded, whatever the
endpoint answers. Once it has answered, :meth:`Budget.settle` counts what the
endpoint reports the request used in place of its :class:`Reservation`; where it
reports no exact usage, the reservation, an upper bound, stays counted. Money is
counted the same way, at the model's price (:func:`latdoc.model.planned_cost` before,
:func:`latdoc.model.cost_of` after): a run given ``max_cost`` never spends more, as far
as the endpoint counts a prompt no longer than it was planned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from latdoc.errors import UsageError
from latdoc.i18n import N_
from latdoc.model import Price, cost_of, planned_cost
from latdoc.records import RequestTrace


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one request was counted at before it was sent: its worst case."""

    prompt_tokens: int
    output_tokens: int
    cost: float = 0.0
    """Dollars, at :attr:`price`; 0 without one."""
    price: Price | None = None
    """The price of the model the request is sent to: what it is settled at."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens


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
    max_cost: float | None = None
    """Dollars over the whole run; ``None`` for no cap. It needs :attr:`price`."""
    price: Price | None = None
    """The model's price: what :attr:`spent` counts in."""
    spent: float = 0.0
    """Dollars counted so far: each request at its worst case until its usage is known."""

    def __post_init__(self) -> None:
        if self.max_requests < 1:
            raise UsageError(N_("--max-requests must be at least 1"))
        if self.token_budget is not None and self.token_budget < 1:
            raise UsageError(N_("--token-budget must be at least 1"))
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise UsageError(N_("--max-seconds must be more than 0"))
        check_money_cap(self.max_cost, self.price)
        self.started = self.clock()

    def can_afford(
        self, prompt_tokens: int, output_tokens: int, count: int = 1, price: Price | None = None
    ) -> bool:
        return self._fits(self._reservation(prompt_tokens, output_tokens, price), count)

    def _fits(self, reservation: Reservation, count: int) -> bool:
        """Whether ``count`` requests each reserved at ``reservation`` fit every cap."""
        if self.requests + count > self.max_requests:
            return False
        tokens = reservation.tokens * count
        if self.token_budget is not None and self.tokens + tokens > self.token_budget:
            return False
        return self.max_cost is None or self.spent + reservation.cost * count <= self.max_cost

    def reserve(
        self, prompt_tokens: int, output_tokens: int, price: Price | None = None
    ) -> Reservation | None:
        """Count one request at its worst case; ``None`` (and nothing counted) if it would
        not fit. ``price``: its model's, where it is not the run's (another arm's model)."""
        reservation = self._reservation(prompt_tokens, output_tokens, price)
        return self._count(reservation) if self._fits(reservation, 1) else None

    def reserve_many(
        self, prompt_tokens: int, output_tokens: int, count: int, price: Price | None = None
    ) -> list[Reservation] | None:
        """Count ``count`` requests sent together, each at its worst case; ``None`` (and
        nothing counted) if they would not all fit."""
        reservation = self._reservation(prompt_tokens, output_tokens, price)
        if not self._fits(reservation, count):
            return None
        return [self._count(reservation) for _ in range(count)]

    def _reservation(
        self, prompt_tokens: int, output_tokens: int, price: Price | None
    ) -> Reservation:
        """A request's worst case, in tokens and in dollars at its model's price."""
        price = price or self.price
        cost = 0.0 if price is None else planned_cost(price, prompt_tokens, output_tokens)
        return Reservation(prompt_tokens, output_tokens, cost, price)

    def _count(self, reservation: Reservation) -> Reservation:
        self.requests += 1
        self.tokens += reservation.tokens
        self.spent += reservation.cost
        return reservation

    def count_resend(self) -> bool:
        """Count a second attempt of a request already reserved, if one more request fits.

        Its tokens are not counted again: an attempt that is resent ended before the
        endpoint generated anything, and the reservation still covers the second."""
        if self.requests >= self.max_requests:
            return False
        self.requests += 1
        return True

    def settle(self, reservation: Reservation, trace: RequestTrace) -> None:
        """Count what the endpoint reports ``trace`` used instead of its ``reservation``;
        where it reports no exact usage (no prompt count, or output counted from the
        stream's chunks) the reservation stays."""
        if trace.prompt_tokens is None or not trace.output_tokens_exact:
            return
        self.tokens += trace.prompt_tokens + (trace.output_tokens or 0) - reservation.tokens
        cost = None if reservation.price is None else cost_of(trace, reservation.price)
        if cost is not None:
            self.spent += cost.total - reservation.cost

    @property
    def caps(self) -> str:
        """The caps a request is counted against, in words: ``request or token budget``,
        and money where the run has a cap in it."""
        if self.max_cost is not None:
            return N_("request, token or money budget")
        return N_("request or token budget")

    @property
    def seconds_left(self) -> float:
        if self.max_seconds is None:
            return float("inf")
        return self.max_seconds - (self.clock() - self.started)

    @property
    def requests_left(self) -> int:
        return self.max_requests - self.requests


def check_money_cap(max_cost: float | None, price: Price | None) -> None:
    """:class:`UsageError` for a cap in money that is not positive, or that has no price
    to count it in."""
    if max_cost is None:
        return
    if max_cost <= 0:
        raise UsageError(N_("--max-cost must be more than 0"))
    if price is None:
        raise UsageError(
            N_(
                "--max-cost needs the model's price, and latdoc's price library does not know "
                "it: give --price in=X,out=Y (dollars per million tokens)"
            )
        )


class Spending(Protocol):
    """A plan's caps, as every sending plan names them."""

    @property
    def max_requests(self) -> int: ...

    @property
    def token_budget(self) -> int | None: ...

    @property
    def max_seconds(self) -> float | None: ...

    @property
    def max_cost(self) -> float | None: ...

    @property
    def price(self) -> Price | None: ...


def budget_for(plan: Spending) -> Budget:
    """A new budget holding ``plan``'s caps."""
    return Budget(
        plan.max_requests,
        plan.token_budget,
        plan.max_seconds,
        max_cost=plan.max_cost,
        price=plan.price,
    )
