"""``latdoc verify --remedy conversation``: strategies that bound a chat, against the lab."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from latdoc import Endpoint, RequestTrace, UsageError, VerifyPlan
from latdoc.cli import EXIT_USAGE, main
from latdoc.features.verify import experiments
from latdoc.features.verify.conversation.analysis import KEEP, TurnRecord, outcomes
from latdoc.features.verify.conversation.send import (
    ConversationOptions,
    Strategy,
    parse_strategies,
)


def test_strategies_parse_and_bad_ones_say_why() -> None:
    assert parse_strategies("window:6, summary:10,reset:20") == (
        Strategy("window", 6),
        Strategy("summary", 10),
        Strategy("reset", 20),
    )
    for bad in ("window", "window:0", "slide:3", "window:2,window:2", ""):
        with pytest.raises(UsageError, match="--strategies"):
            parse_strategies(bad)
    with pytest.raises(UsageError, match="--turns"):
        VerifyPlan(
            Endpoint("http://127.0.0.1:9/v1", "m"),
            experiments.experiment("conversation"),
            options=ConversationOptions(turns=1),
        )


def test_a_bad_strategy_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["verify", "http://127.0.0.1:9/v1", "-m", "m", "--remedy", "conversation",
            "--strategies", "forget:3"]  # fmt: skip
    assert main(argv) == EXIT_USAGE
    assert "forget:3" in capsys.readouterr().err


def _turn(strategy: str, turn: int, ttft_ms: float, prompt_tokens: int) -> TurnRecord:
    first = round(ttft_ms * 1_000_000)
    trace = RequestTrace(datetime.now(UTC), 0, "http://x/v1/chat/completions", "m", "chat",
                         sent_ns=1_000, first_byte_ns=first - 1_000, first_token_ns=first,
                         done_ns=first + 40_000_000, prompt_tokens=prompt_tokens)  # fmt: skip
    return TurnRecord(strategy, turn, trace)


def test_turns_where_a_strategy_sent_keeps_prompt_are_left_out_of_its_test() -> None:
    """window:4 sends the whole chat for five turns (here 1 ms slower each, as a busy
    machine can make it), then 300 ms less for seven: the seven decide, not the noise of
    the five. All twelve paired gave p = 0.077 (no difference); the seven give 0.016."""
    records: list[TurnRecord] = []
    for turn in range(1, 13):
        tokens = 150 * turn
        cut = turn > 5
        records.append(_turn(KEEP, turn, 20 + 0.5 * tokens, tokens))
        window_tokens = 600 if cut else tokens
        window_ms = 20 + 0.5 * window_tokens + (0 if cut else 1.0)
        records.append(_turn("window:4", turn, window_ms, window_tokens))
    _, window = outcomes(records, 12, order=(KEEP, "window:4"))
    assert window.turns_compared == 7
    assert window.p_value == pytest.approx(2 / 2**7)
    assert window.verdict == "better"
    # Where the endpoint reports no prompt size, every turn is compared.
    blind = [dataclasses.replace(r, trace=dataclasses.replace(r.trace, prompt_tokens=None))
             for r in records]  # fmt: skip
    _, unknown = outcomes(blind, 12, order=(KEEP, "window:4"))
    assert unknown.turns_compared == 12 and unknown.verdict == "no_difference"
