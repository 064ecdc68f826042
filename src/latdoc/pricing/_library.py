"""A model's price from genai-prices, read from the snapshot its release bundles.

genai-prices, not LiteLLM's price map: it is a small package of its own (pydantic and an
HTTP client, no SDK of every provider), prices a request's usage token kind by token kind
as a trace keeps it (fresh, cached and reasoning tokens, long-prompt tiers, the day a
price took effect), finds a provider by its API's URL, and its bundled prices are read
offline: nothing here starts its updater, so a lookup sends no request.

The library is imported on the first lookup, not with latdoc: its price table is
1.6 MB of Python, a third of a second to load.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from latdoc.model import Price, PriceTier, Rates
from latdoc.probe.providers import get, owner_of

if TYPE_CHECKING:
    from decimal import Decimal

    from genai_prices.types import ModelPrice, PriceCalculation, TieredPrices

__all__ = ["LIBRARY_PROVIDERS", "find_price"]

LIBRARY_PROVIDERS: Mapping[str, str | None] = {
    "openai": "openai",
    "azure": "azure",
    "anthropic": "anthropic",
    "gemini": "google",
    "vertex": "google",
    "bedrock": "aws",
    "groq": "groq",
    "together": "together",
    "fireworks": "fireworks",
    "deepseek": "deepseek",
    "mistral": "mistral",
    "openrouter": "openrouter",
    "dashscope": None,
    "dashscope-intl": None,
    "moonshot": "moonshotai",
    "moonshot-intl": "moonshotai",
    "zhipu": "zhipuai",
    "zhipu-intl": "zai",
    "ark": None,
    "qianfan": None,
    "siliconflow": None,
    "siliconflow-intl": None,
    "minimax": "minimax",
    "minimax-intl": "minimax",
    "hunyuan": None,
    "stepfun": None,
    "vllm": None,
    "sglang": None,
    "ollama": None,
    "llama.cpp": None,
}
"""Each ``--provider`` preset's provider in genai-prices; ``None`` for a local server,
whose tokens cost what the user says (``--price``) or nothing, and for a provider the
library does not list (DashScope, Ark, Qianfan, SiliconFlow, Hunyuan, StepFun), whose
price only ``--price`` gives."""


def find_price(
    provider: str | None, model: str, base_url: str | None = None, *, at: datetime | None = None
) -> Price | None:
    """genai-prices' price of ``model`` at ``provider`` (a ``--provider`` preset), or at
    whoever serves ``base_url``; ``None`` when it does not know the model there.

    The URL decides where one is given: the preset whose host it is, else a provider
    genai-prices knows by its API's URL (one latdoc has no preset for); a URL on neither
    (a local server, a gateway of the user's own) has no price, whatever the preset,
    for its cost is not the provider's list price. The price is the one in force at
    ``at`` (now, unless given): some change by the day, a few by the hour.

    :class:`~latdoc.errors.UsageError` for a ``provider`` that is no preset.
    """
    when = at if at is not None else datetime.now(UTC)
    if base_url is not None and _local(base_url):
        return None
    if base_url is not None:
        owner = owner_of(base_url)
        if owner is None:
            return _lookup(model, when, api_url=base_url)
        preset = owner.name
    elif provider is not None:
        preset = get(provider).name
    else:
        return None
    library_id = LIBRARY_PROVIDERS[preset]
    return None if library_id is None else _lookup(model, when, provider_id=library_id)


def _local(base_url: str) -> bool:
    """A server on this machine or a private network: no provider's list price is its."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def _lookup(
    model: str, when: datetime, *, provider_id: str | None = None, api_url: str | None = None
) -> Price | None:
    """The price of ``model`` at genai-prices' provider ``provider_id``, else at the one
    whose API ``api_url`` is."""
    import genai_prices
    from genai_prices.types import Usage

    try:
        if provider_id is not None:
            found = genai_prices.calc_price(
                Usage(), model, provider_id=provider_id, genai_request_timestamp=when
            )
        else:
            found = genai_prices.calc_price(
                Usage(), model, provider_api_url=api_url, genai_request_timestamp=when
            )
    except LookupError:
        return None
    return _price(found, genai_prices.__version__)


def _price(found: PriceCalculation, version: str) -> Price | None:
    """The :class:`Price` of a lookup; ``None`` for a model whose text is priced by
    another unit than the token (characters, images)."""
    from genai_prices.types import StartDateConstraint, TieredPrices, TimeOfDateConstraint

    prices = found.model_price
    rates = _rates(prices, 0)
    if rates is None:
        return None
    tiered = (
        prices.input_mtok,
        prices.output_mtok,
        prices.cache_read_mtok,
        prices.output_reasoning_mtok,
    )
    starts = sorted(
        {tier.start for value in tiered if isinstance(value, TieredPrices) for tier in value.tiers}
    )
    tiers = []
    for start in starts:
        tier_rates = _rates(prices, start + 1)
        if tier_rates is not None:
            tiers.append(PriceTier(above=start, rates=tier_rates))
    conditions = [] if not isinstance(found.model.prices, list) else found.model.prices
    in_force = next((c for c in conditions if c.prices is prices), None)
    since = (
        in_force.constraint.start_date
        if in_force is not None and isinstance(in_force.constraint, StartDateConstraint)
        else None
    )
    per_request = _rate(prices.requests_kcount, 0)
    return Price(
        rates=rates,
        source=f"genai-prices {version}",
        since=since,
        priced_as=f"{found.provider.id}/{found.model.id}",
        per_request=0.0 if per_request is None else per_request / 1000,
        tiers=tuple(tiers),
        varies_by_hour=any(isinstance(c.constraint, TimeOfDateConstraint) for c in conditions),
    )


def _rates(prices: ModelPrice, prompt_tokens: int) -> Rates | None:
    """The rates of a request with a prompt of ``prompt_tokens``; ``None`` without a
    price for both the prompt's and the output's tokens."""
    input_rate = _rate(prices.input_mtok, prompt_tokens)
    output_rate = _rate(prices.output_mtok, prompt_tokens)
    if input_rate is None or output_rate is None:
        return None
    return Rates(
        input=input_rate,
        output=output_rate,
        cached_input=_rate(prices.cache_read_mtok, prompt_tokens),
        reasoning=_rate(prices.output_reasoning_mtok, prompt_tokens),
    )


def _rate(value: Decimal | TieredPrices | None, prompt_tokens: int) -> float | None:
    """A price, at its tier for a prompt of ``prompt_tokens`` where it has tiers: the
    highest whose start the prompt is past, as genai-prices bills it."""
    from genai_prices.types import TieredPrices

    if value is None:
        return None
    if not isinstance(value, TieredPrices):
        return float(value)
    passed = [tier.price for tier in value.tiers if prompt_tokens > tier.start]
    return float(passed[-1] if passed else value.base)
