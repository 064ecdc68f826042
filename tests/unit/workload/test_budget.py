"""A run's budget counts each request at its worst case before it is sent, then what the
endpoint reports it used, and keeps the worst case where the endpoint reports nothing
exact: the caps hold whatever the endpoint answers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from latdoc.errors import UsageError
from latdoc.model import Price, Rates
from latdoc.workload import Budget
from unit.analysis.test_compare import trace


def test_a_reported_usage_replaces_the_reservation() -> None:
    budget = Budget(max_requests=10, token_budget=1_000)
    reservation = budget.reserve(300, 200)
    assert reservation is not None and budget.tokens == 500
    budget.settle(reservation, replace(trace(100, 200), prompt_tokens=280, output_tokens=20))
    assert budget.tokens == 300
    assert budget.requests == 1


def test_without_an_exact_usage_the_worst_case_stays_counted() -> None:
    budget = Budget(max_requests=10, token_budget=1_000)
    no_prompt = budget.reserve(300, 200)
    counted = budget.reserve(300, 200)
    assert no_prompt is not None and counted is not None
    budget.settle(no_prompt, replace(trace(100, 200), prompt_tokens=None, output_tokens=20))
    budget.settle(
        counted,
        replace(trace(100, 200), prompt_tokens=280, output_tokens=20, output_tokens_exact=False),
    )
    assert budget.tokens == 1_000
    assert budget.reserve(1, 1) is None


def test_requests_sent_together_are_reserved_all_or_none() -> None:
    budget = Budget(max_requests=5, token_budget=1_000)
    assert budget.reserve_many(100, 100, 6) is None
    assert budget.reserve_many(300, 100, 3) is None
    assert (budget.requests, budget.tokens) == (0, 0)
    together = budget.reserve_many(100, 100, 4)
    assert together is not None and len(together) == 4
    assert (budget.requests, budget.tokens) == (4, 800)


def _price(input_rate: float, output_rate: float, cached: float | None = None) -> Price:
    return Price(Rates(input=input_rate, output=output_rate, cached_input=cached), source="test")


def test_money_is_reserved_at_the_worst_case_and_settled_at_the_reported_usage() -> None:
    # $10 a million prompt tokens, $30 a million output tokens: a 1,000-token prompt
    # with 500 tokens of output is planned at 1 cent plus 1.5 cents.
    budget = Budget(max_requests=100, max_cost=0.06, price=_price(10.0, 30.0, cached=1.0))
    first = budget.reserve(1_000, 500)
    assert first is not None and first.cost == pytest.approx(0.025)
    assert budget.spent == pytest.approx(0.025)
    second = budget.reserve(1_000, 500)
    assert second is not None
    assert budget.reserve(1_000, 500) is None  # a third would pass the 6 cents
    # The first answered with 100 tokens, its prompt read 800 of 1,000 from the cache.
    answer = replace(
        trace(100, 200), prompt_tokens=1_000, cached_prompt_tokens=800, output_tokens=100
    )
    budget.settle(first, answer)
    expected = (200 * 10.0 + 800 * 1.0 + 100 * 30.0) / 1e6
    assert budget.spent == pytest.approx(expected + 0.025)
    assert budget.reserve(1_000, 500) is not None


def test_a_server_that_reports_no_usage_keeps_its_worst_case_counted_in_money() -> None:
    budget = Budget(max_requests=100, max_cost=0.03, price=_price(10.0, 30.0))
    reservation = budget.reserve(1_000, 500)
    assert reservation is not None
    budget.settle(reservation, replace(trace(100, 200), prompt_tokens=None))
    assert budget.spent == pytest.approx(0.025)
    assert budget.reserve(1_000, 500) is None


def test_a_money_cap_needs_a_price_and_a_positive_amount() -> None:
    with pytest.raises(UsageError, match="--price in=X,out=Y"):
        Budget(max_requests=10, max_cost=1.0)
    with pytest.raises(UsageError, match="--max-cost must be more than 0"):
        Budget(max_requests=10, max_cost=0.0, price=_price(1.0, 1.0))
