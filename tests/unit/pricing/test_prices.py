"""Where a price comes from: the pinned genai-prices for a provider's model, the user's
``--price`` otherwise.

A request priced at the library's price costs what genai-prices' own calculator says
for the same usage; the lookups run sealed (no socket), so the bundled prices are read
offline. A bad ``--price`` is one line naming what is wrong.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import genai_prices
import pytest
from genai_prices.data_snapshot import get_snapshot

from latdoc.errors import UsageError
from latdoc.model import Price, Rates, cost_of
from latdoc.pricing import LIBRARY_PROVIDERS, USER_SOURCE, find_price, parse_price, price_for
from latdoc.probe import providers
from latdoc.records import RequestTrace

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def trace(prompt: int, output: int, cached: int = 0, reasoning: int = 0) -> RequestTrace:
    return RequestTrace(
        started_at=AT,
        t0_ns=0,
        url="https://api.example.com/v1/chat/completions",
        model="m",
        dialect="chat",
        prompt_tokens=prompt,
        output_tokens=output,
        output_tokens_exact=True,
        cached_prompt_tokens=cached,
        reasoning_tokens=reasoning,
    )


def library_total(
    library_id: str, model: str, prompt: int, output: int, cached: int, reasoning: int
) -> float:
    """genai-prices' own price of the usage, in the library's terms: its input counts the
    cached prompt, its output the reasoning, as a trace's do."""
    usage = genai_prices.Usage(
        input_tokens=prompt,
        cache_read_tokens=cached,
        output_tokens=output,
        output_reasoning_tokens=reasoning,
    )
    found = genai_prices.calc_price(
        usage, model, provider_id=library_id, genai_request_timestamp=AT
    )
    return float(found.total_price)


USAGES = [
    pytest.param(12_000, 800, 0, 0, id="fresh"),
    pytest.param(12_000, 800, 9_000, 0, id="cached"),
    pytest.param(12_000, 800, 9_000, 500, id="cached and reasoning"),
    pytest.param(250_000, 800, 100_000, 300, id="long prompt"),
]
MODELS = [
    pytest.param("openai", None, "gpt-4o", "openai", id="openai"),
    pytest.param("anthropic", None, "claude-sonnet-4-5", "anthropic", id="anthropic"),
    pytest.param(
        None,
        "https://generativelanguage.googleapis.com/v1beta",
        "gemini-2.5-pro",
        "google",
        id="gemini by URL",
    ),
    pytest.param(
        None,
        "https://api.perplexity.ai",
        "sonar-deep-research",
        "perplexity",
        id="a reasoning rate",
    ),
    pytest.param(
        None, "https://api.perplexity.ai", "sonar-pro", "perplexity", id="a price per request"
    ),
]


@pytest.mark.parametrize(("provider", "url", "model", "library_id"), MODELS)
@pytest.mark.parametrize(("prompt", "output", "cached", "reasoning"), USAGES)
def test_a_request_costs_what_the_library_computes(
    provider: str | None,
    url: str | None,
    model: str,
    library_id: str,
    prompt: int,
    output: int,
    cached: int,
    reasoning: int,
) -> None:
    price = find_price(provider, model, url, at=AT)
    assert price is not None
    cost = cost_of(trace(prompt, output, cached, reasoning), price)
    assert cost is not None
    expected = library_total(library_id, model, prompt, output, cached, reasoning)
    assert cost.total == pytest.approx(expected, rel=1e-12)


def test_the_pinned_prices_are_marked_with_their_source() -> None:
    price = find_price("openai", "gpt-4o", at=AT)
    assert price == Price(
        rates=Rates(input=2.5, output=10.0, cached_input=1.25),
        source="genai-prices 0.2.3",
        priced_as="openai/gpt-4o",
    )


def test_a_long_prompt_has_the_tier_the_library_lists() -> None:
    price = find_price("anthropic", "claude-sonnet-4-5", at=AT)
    assert price is not None
    assert [tier.above for tier in price.tiers] == [200_000]
    assert price.rates_for(200_001).input == 2 * price.rates.input


def test_a_price_that_took_effect_on_a_day_says_which() -> None:
    price = find_price("openai", "o3", at=AT)
    assert price is not None
    assert price.since == date(2025, 6, 10)
    before = find_price("openai", "o3", at=datetime(2025, 6, 9, tzinfo=UTC))
    assert before is not None
    assert before.rates.input > price.rates.input
    assert before.since is None


def test_an_off_peak_price_is_the_one_at_the_hour_asked() -> None:
    peak = find_price("deepseek", "deepseek-chat", at=AT)
    off_peak = find_price("deepseek", "deepseek-chat", at=AT.replace(hour=20))
    assert peak is not None and off_peak is not None
    assert peak.varies_by_hour and off_peak.varies_by_hour
    assert off_peak.rates.input < peak.rates.input


def test_a_host_latdoc_has_no_preset_for_is_priced_by_its_url() -> None:
    price = find_price(None, "grok-4", "https://api.x.ai/v1", at=AT)
    assert price is not None
    assert price.priced_as is not None and price.priced_as.startswith("x-ai/")


@pytest.mark.parametrize(
    ("provider", "model", "url"),
    [
        pytest.param("openai", "no-such-model", None, id="a model the library does not know"),
        pytest.param("vllm", "gpt-4o", None, id="a local server's preset"),
        pytest.param("ollama", "gpt-4o", "http://127.0.0.1:11434/v1", id="a local server"),
        pytest.param("openai", "gpt-4o", "http://127.0.0.1:8000/v1", id="a preset on loopback"),
        pytest.param(None, "gpt-4o", "https://llm.internal.example/v1", id="a gateway"),
        pytest.param(None, "gpt-4o", None, id="neither provider nor URL"),
    ],
)
def test_no_price_for_what_the_library_does_not_price(
    provider: str | None, model: str, url: str | None
) -> None:
    assert find_price(provider, model, url, at=AT) is None


def test_an_unknown_provider_is_the_users_mistake() -> None:
    with pytest.raises(UsageError, match="unknown provider 'nope'"):
        find_price("nope", "gpt-4o")


CLOUD = {
    "AZURE_OPENAI_ENDPOINT": "https://my-res.openai.azure.com",
    "GOOGLE_CLOUD_PROJECT": "p-1",
    "AWS_REGION": "eu-west-3",
}


def test_every_preset_names_the_provider_the_library_finds_at_its_url() -> None:
    assert set(LIBRARY_PROVIDERS) == set(providers.names())
    snapshot = get_snapshot()
    for preset in providers.PROVIDERS:
        library_id = LIBRARY_PROVIDERS[preset.name]
        if not preset.hosts:
            assert library_id is None, preset.name
            continue
        try:
            found: str | None = snapshot.find_provider(None, None, preset.url(CLOUD)).id
        except LookupError:
            found = None
        assert library_id == found, preset.name
    assert {LIBRARY_PROVIDERS[n] for n in ("moonshot", "zhipu", "zhipu-intl", "minimax")} == {
        "moonshotai",
        "zhipuai",
        "zai",
        "minimax",
    }


@pytest.mark.parametrize(
    ("text", "rates"),
    [
        ("in=2.5,out=10", Rates(input=2.5, output=10.0)),
        (" in = 3 , out = 15 , cached = 0.3 ", Rates(input=3.0, output=15.0, cached_input=0.3)),
        ("out=1,in=0", Rates(input=0.0, output=1.0)),
        ("in=1e-1,out=.4,", Rates(input=0.1, output=0.4)),
    ],
)
def test_the_users_price(text: str, rates: Rates) -> None:
    assert parse_price(text) == Price(rates=rates, source=USER_SOURCE)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "needs in and out"),
        ("in=1", "needs out"),
        ("out=1", "needs in"),
        ("in=1,out=2,extra=3", "unknown key 'extra'"),
        ("input=1,out=2", "unknown key 'input'"),
        ("in=1,out=2,in=3", "in is given twice"),
        ("in=1,out=two", "out='two' is not a number"),
        ("in=nan,out=1", "in='nan' is not a number"),
        ("in=inf,out=1", "in='inf' is not a number"),
        ("in=1_000,out=1", "in='1_000' is not a number"),
        ("in=,out=1", "in='' is not a number"),
        ("in=-1,out=2", "in=-1 is negative"),
        ("in=1,out=2,cached=-0.5", "cached=-0.5 is negative"),
        ("in 1,out=2", "'in 1' is not KEY=VALUE"),
    ],
)
def test_a_bad_price_is_one_line_naming_what_is_wrong(text: str, said: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_price(text)
    message = str(caught.value)
    assert said in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "http://localhost:11434/v1",
        "http://[::1]:8000/v1",
        "http://10.0.0.7:8000/v1",
        "http://192.168.1.20/v1",
    ],
)
def test_a_server_on_this_machine_or_a_private_network_has_no_list_price(url: str) -> None:
    assert price_for("gpt-4o", url) is None


def test_the_users_price_comes_before_the_librarys() -> None:
    listed = price_for("gpt-4o", "https://api.openai.com/v1")
    assert listed is not None and listed.source.startswith("genai-prices ")
    given = price_for("gpt-4o", "https://api.openai.com/v1", "in=1,out=2")
    assert given is not None and given.source == "--price"
    assert (given.rates.input, given.rates.output) == (1.0, 2.0)
