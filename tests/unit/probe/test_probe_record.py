"""What a trace records for load work: request and response ids, the wall-clock start in
nanoseconds, every attempt of a resent request, and the fields an engine needs."""

from __future__ import annotations

import pytest

from latdoc import (
    Budget,
    Endpoint,
    UsageError,
)
from latdoc.cli import EXIT_USAGE, main


def test_the_budget_counts_a_resend_while_a_request_is_left() -> None:
    budget = Budget(max_requests=2)
    assert budget.reserve(10, 5)
    assert budget.count_resend()
    assert (budget.requests, budget.tokens) == (2, 15)
    assert not budget.count_resend()
    assert budget.requests == 2


@pytest.mark.parametrize("field", ["model", "messages", "prompt", "stream", "max_tokens"])
def test_extra_body_may_not_set_what_latdoc_writes(field: str) -> None:
    with pytest.raises(UsageError, match=f"may not set {field} "):
        Endpoint("http://127.0.0.1:1/v1", "m", extra_body={field: 1})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"model": "other"}', "may not set model (--model sets it)"),
        ('{"stream": false, "messages": []}', "may not set messages (the prompt options"),
        ("[1, 2]", "expected a JSON object"),
        ("{ignore_eos: true}", "not valid JSON"),
    ],
)
@pytest.mark.parametrize("command", ["probe", "diagnose", "verify"])
def test_the_extra_body_option_refuses_with_one_clear_line(
    command: str, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([command, "http://127.0.0.1:1/v1", "-m", "m", "--extra-body", text])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.startswith("Error: argument --extra-body: ")
    assert message in err
    assert len(err.strip().splitlines()) == 1
