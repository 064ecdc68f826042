"""What a request costs: a :class:`Price`, the :class:`Cost` of one request from the usage
its server reported, a run's :class:`CostSummary`, and the worst case of a request not
yet sent (:func:`planned_cost`).

Money is US dollars throughout; a price is dollars per million tokens, as providers
list them. The prompt tokens are a trace's ``prompt_tokens``, which count the cached
ones too (:attr:`~latdoc.records.RequestTrace.cached_prompt_tokens`, read from the
cache) and the prompt written to a cache, which a trace does not keep apart and which
is priced here as fresh input (Anthropic charges 1.25 times that for it). The output
tokens count the reasoning tokens, priced at the output's rate unless the price has one
of their own. Where a price comes from (the user's ``--price`` or a price library) is
:mod:`latdoc.pricing`'s; this module only reads one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any

from latdoc.i18n import N_, Message
from latdoc.records import RequestTrace

__all__ = [
    "Cost",
    "CostSummary",
    "Price",
    "PriceTier",
    "Rates",
    "cost_of",
    "cost_text",
    "cost_to_dict",
    "dollars",
    "planned_cost",
    "price_from_dict",
    "price_to_dict",
    "summarise_costs",
]

_MILLION = 1_000_000
"""Tokens a rate is the price of."""


@dataclass(frozen=True, slots=True)
class Rates:
    """Dollars per million tokens of each kind."""

    input: float
    """A prompt token not read from a cache."""
    output: float
    """An output token (an answer's, and a reasoning one unless :attr:`reasoning` is set)."""
    cached_input: float | None = None
    """A prompt token read from the cache; ``None``: the price has none, such a token
    costs :attr:`input`."""
    reasoning: float | None = None
    """A reasoning token; ``None``: the price has none, it costs :attr:`output`."""

    @property
    def cached(self) -> float:
        """What a cached prompt token costs."""
        return self.input if self.cached_input is None else self.cached_input

    @property
    def thinking(self) -> float:
        """What a reasoning token costs."""
        return self.output if self.reasoning is None else self.reasoning


@dataclass(frozen=True, slots=True)
class PriceTier:
    """Rates for a long prompt: a request whose prompt has more than :attr:`above` tokens
    pays these for every one of its tokens, as providers bill a long context."""

    above: int
    rates: Rates


@dataclass(frozen=True, slots=True)
class Price:
    """What a model's tokens cost, and where that was read."""

    rates: Rates
    """The rates of a request whose prompt is below every tier."""
    source: str
    """Where the price was read, with its version: ``genai-prices 0.2.3``, ``--price``."""
    since: date | None = None
    """The day the source says this price took effect; ``None`` when it says none (the
    user's price, or a price the source has always listed)."""
    priced_as: str | None = None
    """The source's names of the provider and model priced (``openai/gpt-4o``), which a
    dated or regional model name was matched to; ``None`` for the user's price."""
    per_request: float = 0.0
    """Dollars a request costs on top of its tokens (a few models charge one)."""
    tiers: tuple[PriceTier, ...] = ()
    """Dearer rates for longer prompts, by :attr:`PriceTier.above`, ascending."""
    varies_by_hour: bool = False
    """The source charges other rates at other hours of the day (an off-peak discount):
    these are the rates at the hour the price was looked up for."""

    def rates_for(self, prompt_tokens: int) -> Rates:
        """The rates of a request with a prompt of ``prompt_tokens``: the highest tier it
        is above, else the base rates."""
        for tier in reversed(self.tiers):
            if prompt_tokens > tier.above:
                return tier.rates
        return self.rates


@dataclass(frozen=True, slots=True)
class Cost:
    """One request's cost in dollars, by the kind of token it paid for."""

    input: float
    """The prompt's tokens not read from a cache."""
    cached_input: float
    """The prompt's tokens read from a cache."""
    output: float
    """The output's tokens that are not reasoning."""
    reasoning: float
    """The reasoning tokens."""
    request: float = 0.0
    """The price of the request itself (:attr:`Price.per_request`)."""

    @property
    def total(self) -> float:
        """What the request cost."""
        return self.input + self.cached_input + self.output + self.reasoning + self.request


def cost_of(trace: RequestTrace, price: Price) -> Cost | None:
    """What ``trace`` cost at ``price``, from the usage its server reported; ``None`` when
    it reported none (no prompt tokens, or output tokens only counted from the chunks).

    A failed request that reported its usage is priced too: the server billed it.
    """
    if trace.prompt_tokens is None or trace.output_tokens is None:
        return None
    if not trace.output_tokens_exact:
        return None
    prompt, output = trace.prompt_tokens, trace.output_tokens
    cached = min(trace.cached_prompt_tokens or 0, prompt)
    reasoning = min(trace.reasoning_tokens or 0, output)
    rates = price.rates_for(prompt)
    return Cost(
        input=(prompt - cached) * rates.input / _MILLION,
        cached_input=cached * rates.cached / _MILLION,
        output=(output - reasoning) * rates.output / _MILLION,
        reasoning=reasoning * rates.thinking / _MILLION,
        request=price.per_request,
    )


def planned_cost(price: Price, prompt_tokens: int, max_tokens: int) -> float:
    """The most a request not yet sent can cost, in dollars: its prompt all fresh input
    (no cache read, which costs less) and its output the whole of ``max_tokens``, each
    at the dearer of its token kinds' rates.

    A bound only as far as the server counts the prompt as planned: a prompt it counts
    past a tier's threshold is billed at the tier's rates.
    """
    rates = price.rates_for(prompt_tokens)
    prompt_rate = max(rates.input, rates.cached)
    output_rate = max(rates.output, rates.thinking)
    return (prompt_tokens * prompt_rate + max_tokens * output_rate) / _MILLION + price.per_request


@dataclass(frozen=True, slots=True)
class CostSummary:
    """What a run's requests cost, and how many of them could not be priced."""

    price: Price
    requests: int
    """Requests summarised."""
    without_usage: int
    """Requests whose server reported no usage: left out of every figure here."""
    total: float | None
    """Dollars the requests with usage cost; ``None`` when none had usage."""

    @property
    def priced(self) -> int:
        """Requests with usage: the ones :attr:`total` is the cost of."""
        return self.requests - self.without_usage

    @property
    def per_request(self) -> float | None:
        """The mean cost of a request with usage."""
        return None if self.total is None else self.total / self.priced

    @property
    def per_1000_requests(self) -> float | None:
        """The cost of a thousand requests like these."""
        per_request = self.per_request
        return None if per_request is None else per_request * 1000


def summarise_costs(traces: Iterable[RequestTrace], price: Price) -> CostSummary:
    """The cost of ``traces`` at ``price``: the total over those with usage, and how many
    had none."""
    costs = [cost_of(trace, price) for trace in traces]
    known = [cost.total for cost in costs if cost is not None]
    return CostSummary(
        price=price,
        requests=len(costs),
        without_usage=len(costs) - len(known),
        total=sum(known) if known else None,
    )


def dollars(amount: float) -> str:
    """``amount`` as money, to the cent from a dollar up, else to three significant
    figures, trailing zeros dropped (a request costs fractions of a cent)."""
    if amount == 0:
        return "$0"
    sign, amount = ("-" if amount < 0 else ""), abs(amount)
    if amount >= 1:
        return f"{sign}${amount:,.2f}"
    decimals = 2 - math.floor(math.log10(amount))
    whole, _, fraction = f"{amount:.{decimals}f}".partition(".")
    return f"{sign}${whole}.{fraction.rstrip('0').ljust(2, '0')}"


def _price_words(price: Price) -> Message:
    named = Message(" of {model}", model=price.priced_as) if price.priced_as else ""
    since = Message(", since {date}", date=price.since.isoformat()) if price.since else ""
    return Message(
        "at the price{named} from {source}{since}", named=named, source=price.source, since=since
    )


def cost_text(summary: CostSummary | None, model: str) -> str:
    """What a run cost, in one sentence, with the price's source; where it cannot be
    priced, why, and no figure."""
    return Message("Cost: {cost}", cost=cost_words(summary, model))


def cost_words(summary: CostSummary | None, model: str) -> str:
    """:func:`cost_text` without its ``Cost:``, for a page that labels it."""
    if summary is None:
        return Message(
            "unknown: latdoc has no price for model {model} at this endpoint; "
            "--price in=X,out=Y (dollars per million tokens) counts it",
            model=model,
        )
    if summary.total is None:
        return Message(
            "unknown: the server reported no usage for any of the {n} requests ({price})",
            n=summary.requests,
            price=_price_words(summary.price),
        )
    per = summary.per_1000_requests
    thousand = "" if per is None else Message(" ({cost} per 1,000 like them)", cost=dollars(per))
    text = Message(
        N_("{cost} for {n} request{thousand}, {price}")
        if summary.priced == 1
        else N_("{cost} for {n} requests{thousand}, {price}"),
        cost=dollars(summary.total),
        n=summary.priced,
        thousand=thousand,
        price=_price_words(summary.price),
    )
    if summary.without_usage:
        n = summary.without_usage
        text = Message(
            N_("{text}; {n} request reported no usage and is not counted")
            if n == 1
            else N_("{text}; {n} requests reported no usage and are not counted"),
            text=text,
            n=n,
        )
    return text


def price_to_dict(price: Price) -> dict[str, Any]:
    """``price`` as JSON, as a run keeps it and a document shows it."""

    def rates(r: Rates) -> dict[str, float | None]:
        return {
            "input": r.input,
            "output": r.output,
            "cached_input": r.cached_input,
            "reasoning": r.reasoning,
        }

    return {
        "source": price.source,
        "since": None if price.since is None else price.since.isoformat(),
        "priced_as": price.priced_as,
        "per_million_tokens": rates(price.rates),
        "per_request": price.per_request,
        "tiers": [{"above": t.above, "per_million_tokens": rates(t.rates)} for t in price.tiers],
        "varies_by_hour": price.varies_by_hour,
    }


def price_from_dict(data: Any) -> Price | None:
    """The price :func:`price_to_dict` wrote; ``None`` for anything else (a run kept
    before prices were)."""
    if not isinstance(data, dict) or not isinstance(data.get("per_million_tokens"), dict):
        return None

    def rates(r: dict[str, Any]) -> Rates:
        return Rates(
            input=float(r["input"]),
            output=float(r["output"]),
            cached_input=None if r.get("cached_input") is None else float(r["cached_input"]),
            reasoning=None if r.get("reasoning") is None else float(r["reasoning"]),
        )

    since = data.get("since")
    return Price(
        rates=rates(data["per_million_tokens"]),
        source=str(data.get("source", "")),
        since=None if not since else date.fromisoformat(str(since)),
        priced_as=data.get("priced_as"),
        per_request=float(data.get("per_request", 0.0)),
        tiers=tuple(
            PriceTier(int(t["above"]), rates(t["per_million_tokens"]))
            for t in data.get("tiers", [])
        ),
        varies_by_hour=bool(data.get("varies_by_hour", False)),
    )


def cost_to_dict(summary: CostSummary | None) -> dict[str, Any] | None:
    """A run's cost as JSON; ``None`` where it has no price."""
    if summary is None:
        return None
    return {
        "currency": "USD",
        "total": summary.total,
        "requests": summary.requests,
        "priced_requests": summary.priced,
        "without_usage": summary.without_usage,
        "per_request": summary.per_request,
        "per_1000_requests": summary.per_1000_requests,
        "price": price_to_dict(summary.price),
    }
