"""What a request costs at a price: each kind of token at its own rate, a long prompt at
its tier's, no cost without the server's usage, and a planned request's worst case that
no answer within its ``max_tokens`` exceeds."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from latdoc.model import (
    Price,
    PriceTier,
    Rates,
    cost_of,
    cost_text,
    cost_to_dict,
    dollars,
    planned_cost,
    price_from_dict,
    price_to_dict,
    summarise_costs,
)
from latdoc.records import RequestTrace
from latdoc.store import diagnosis_from_record, diagnosis_to_record
from report_samples import make_diagnosis

PRICE = Price(
    rates=Rates(input=2.0, output=8.0, cached_input=0.5, reasoning=3.0),
    source="test",
    tiers=(PriceTier(above=200_000, rates=Rates(input=4.0, output=12.0)),),
)


def trace(
    prompt: int | None,
    output: int | None,
    *,
    cached: int | None = None,
    reasoning: int | None = None,
    exact: bool = True,
) -> RequestTrace:
    return RequestTrace(
        started_at=datetime(2026, 11, 30, tzinfo=UTC),
        t0_ns=0,
        url="https://api.example.com/v1/chat/completions",
        model="m",
        dialect="chat",
        prompt_tokens=prompt,
        output_tokens=output,
        output_tokens_exact=exact,
        cached_prompt_tokens=cached,
        reasoning_tokens=reasoning,
    )


def test_each_kind_of_token_costs_its_own_rate() -> None:
    cost = cost_of(trace(10_000, 1_000, cached=4_000, reasoning=600), PRICE)
    assert cost is not None
    assert cost.input == pytest.approx(6_000 * 2.0 / 1e6)
    assert cost.cached_input == pytest.approx(4_000 * 0.5 / 1e6)
    assert cost.output == pytest.approx(400 * 8.0 / 1e6)
    assert cost.reasoning == pytest.approx(600 * 3.0 / 1e6)
    assert cost.total == pytest.approx(0.012 + 0.002 + 0.0032 + 0.0018)


def test_a_price_without_cached_or_reasoning_rates_charges_input_and_output() -> None:
    flat = Price(rates=Rates(input=2.0, output=8.0), source="test")
    cost = cost_of(trace(10_000, 1_000, cached=4_000, reasoning=600), flat)
    assert cost is not None
    assert cost.total == pytest.approx((10_000 * 2.0 + 1_000 * 8.0) / 1e6)


def test_a_prompt_past_a_tier_pays_the_tier_for_every_token() -> None:
    at_threshold = cost_of(trace(200_000, 100), PRICE)
    past = cost_of(trace(200_001, 100), PRICE)
    assert at_threshold is not None and past is not None
    assert at_threshold.total == pytest.approx((200_000 * 2.0 + 100 * 8.0) / 1e6)
    assert past.total == pytest.approx((200_001 * 4.0 + 100 * 12.0) / 1e6)


def test_a_price_per_request_is_added_once() -> None:
    fee = Price(rates=Rates(input=1.0, output=1.0), source="test", per_request=0.012)
    cost = cost_of(trace(1_000, 1_000), fee)
    assert cost is not None
    assert cost.request == 0.012
    assert cost.total == pytest.approx(0.002 + 0.012)


@pytest.mark.parametrize(
    "usage",
    [
        pytest.param(trace(None, 100), id="no prompt tokens"),
        pytest.param(trace(1_000, None), id="no output tokens"),
        pytest.param(trace(1_000, 100, exact=False), id="output counted from chunks"),
    ],
)
def test_no_usage_no_cost(usage: RequestTrace) -> None:
    assert cost_of(usage, PRICE) is None


def test_a_summary_prices_the_requests_with_usage_and_counts_the_rest() -> None:
    traces = [trace(1_000, 100), trace(3_000, 300), trace(None, None)]
    summary = summarise_costs(traces, PRICE)
    each = [(1_000 * 2.0 + 100 * 8.0) / 1e6, (3_000 * 2.0 + 300 * 8.0) / 1e6]
    assert (summary.requests, summary.without_usage, summary.priced) == (3, 1, 2)
    assert summary.total == pytest.approx(sum(each))
    assert summary.per_request == pytest.approx(sum(each) / 2)
    assert summary.per_1000_requests == pytest.approx(sum(each) / 2 * 1000)


def test_a_summary_of_requests_without_usage_has_no_figures_not_zeros() -> None:
    summary = summarise_costs([trace(None, None), trace(1_000, 5, exact=False)], PRICE)
    assert (summary.requests, summary.without_usage) == (2, 2)
    assert summary.total is None
    assert summary.per_request is None
    assert summary.per_1000_requests is None


rates = st.floats(min_value=0, max_value=100, allow_nan=False)


@given(
    prompt=st.integers(0, 400_000),
    cached_share=st.floats(0, 1),
    max_tokens=st.integers(0, 50_000),
    output_share=st.floats(0, 1),
    reasoning_share=st.floats(0, 1),
    input_rate=rates,
    cached_rate=rates | st.none(),
    output_rate=rates,
    reasoning_rate=rates | st.none(),
)
def test_no_answer_within_max_tokens_costs_more_than_planned(
    prompt: int,
    cached_share: float,
    max_tokens: int,
    output_share: float,
    reasoning_share: float,
    input_rate: float,
    cached_rate: float | None,
    output_rate: float,
    reasoning_rate: float | None,
) -> None:
    base = Rates(input_rate, output_rate, cached_rate, reasoning_rate)
    price = Price(
        rates=base,
        source="test",
        per_request=0.001,
        tiers=(PriceTier(above=200_000, rates=Rates(input_rate * 2, output_rate * 1.5)),),
    )
    output = int(max_tokens * output_share)
    answered = trace(
        prompt,
        output,
        cached=int(prompt * cached_share),
        reasoning=int(output * reasoning_share),
    )
    cost = cost_of(answered, price)
    assert cost is not None
    assert cost.total <= planned_cost(price, prompt, max_tokens) * (1 + 1e-12)


def test_the_plan_charges_the_whole_prompt_fresh_and_the_whole_max_tokens() -> None:
    assert planned_cost(PRICE, 10_000, 500) == pytest.approx((10_000 * 2.0 + 500 * 8.0) / 1e6)
    assert planned_cost(PRICE, 250_000, 500) == pytest.approx((250_000 * 4.0 + 500 * 12.0) / 1e6)


def test_a_run_says_what_it_cost_with_the_price_and_its_source() -> None:
    dated = Price(
        rates=Rates(input=2.0, output=8.0),
        source="genai-prices 0.2.3",
        priced_as="openai/gpt-4.1",
        since=date(2025, 4, 14),
    )
    summary = summarise_costs([trace(1_000, 100), trace(None, None)], dated)
    text = cost_text(summary, "gpt-4.1")
    assert text.startswith("Cost: $0.0028 for 1 request ($2.80 per 1,000 like them)")
    assert "openai/gpt-4.1 from genai-prices 0.2.3, since 2025-04-14" in text
    assert text.endswith("1 request reported no usage and is not counted")
    document = cost_to_dict(summary)
    assert document is not None and document["total"] == pytest.approx(0.0028)
    assert price_from_dict(document["price"]) == dated


def test_without_a_price_or_a_usage_the_cost_is_unknown_never_zero() -> None:
    assert cost_to_dict(None) is None
    unpriced = cost_text(None, "lab-sim")
    assert "unknown" in unpriced and "--price in=X,out=Y" in unpriced and "$" not in unpriced
    silent = cost_text(summarise_costs([trace(None, None)], PRICE), "m")
    assert "unknown" in silent and "$" not in silent


def test_a_price_kept_in_a_run_reads_back_whole() -> None:
    assert price_from_dict(price_to_dict(PRICE)) == PRICE
    assert price_from_dict(None) is None
    assert price_from_dict({"source": "old"}) is None


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (0.0, "$0"),
        (12.3456, "$12.35"),
        (0.01234, "$0.0123"),
        (0.000012345, "$0.0000123"),
        (0.5, "$0.50"),
        (0.0028, "$0.0028"),
        (-0.0004, "-$0.0004"),
    ],
)
def test_money_is_shown_to_the_cent_or_three_figures(amount: float, shown: str) -> None:
    assert dollars(amount) == shown


def test_a_stored_diagnosis_reads_its_cost_back() -> None:
    summary = summarise_costs([trace(1_000, 100), trace(None, None)], PRICE)
    costed = replace(make_diagnosis(), cost=summary)
    assert diagnosis_from_record(diagnosis_to_record(costed)).cost == summary
    assert diagnosis_from_record(diagnosis_to_record(make_diagnosis())).cost is None
