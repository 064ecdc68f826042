"""A run's budget counts each request at its worst case before it is sent, then what the
endpoint reports it used, and keeps the worst case where the endpoint reports nothing
exact: the caps hold whatever the endpoint answers."""

from __future__ import annotations

from dataclasses import replace

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
