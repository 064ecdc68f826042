"""``latdoc verify --remedy conversation``: strategies that bound a chat, against the lab."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from conftest import closed_port
from latdoc import Endpoint, RequestTrace, Store, UsageError, VerifyPlan, VerifyRemedy
from latdoc.cli import EXIT_OK, EXIT_USAGE, main
from latdoc.features.verify import verify_conversation
from latdoc.features.verify.conversation.analysis import KEEP, TurnRecord, outcomes
from latdoc.features.verify.conversation.send import (
    ConversationOptions,
    Strategy,
    parse_strategies,
)
from latdoc.lab.sim import LabConfig, LabProcess, LabServer, LatencyModel

LINEAR = LatencyModel(prefill_base_ms=10.0, prefill_ms_per_token=0.2, decode_ms_per_token=1.0)


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
            VerifyRemedy.CONVERSATION,
            options=ConversationOptions(turns=1),
        )


STEEP = dataclasses.replace(LINEAR, prefill_ms_per_token=0.5)
"""A prefill steep enough that what window:4 saves stands out of a busy machine's
stalls (at 0.2 ms a token, a CPU hog and another test beside it once hid it)."""


def test_each_strategy_holds_the_chat_it_promises(tmp_path: Path) -> None:
    chat = ConversationOptions(
        turns=12, tokens_per_turn=150, strategies="window:4,summary:6,reset:8"
    )
    with LabProcess(LabConfig(latency=STEEP)) as lab:
        plan = VerifyPlan(
            Endpoint(lab.base_url, "lab-sim"),
            VerifyRemedy.CONVERSATION,
            max_tokens=16,
            seed=5,
            options=chat,
        )
        with Store(tmp_path / "c.db") as store:
            held = verify_conversation(plan, store=store)
            stored = {name: store.load_run(run_id) for name, run_id in held.run_ids.items()}
    by_name = {o.strategy: o for o in held.outcomes}
    assert list(by_name) == ["keep", "window:4", "summary:6", "reset:8"]
    keep, window = by_name["keep"], by_name["window:4"]
    # keep sends the whole history: every turn's prompt is longer than the one before,
    # and its first token follows the lab's linear prefill: the fitted cost of a token
    # is the lab's own.
    tokens = [t for t in keep.prompt_tokens_by_turn if t is not None]
    assert len(tokens) == 12 and tokens == sorted(tokens) and tokens[-1] > 5 * tokens[0]
    ttfts = [t for t in keep.ttft_by_turn if t is not None]
    slope, _ = np.polyfit(tokens, ttfts, 1)
    assert slope == pytest.approx(STEEP.prefill_ms_per_token, rel=0.15)
    # window:4 stops growing once four turns are kept.
    plateau = window.prompt_tokens_by_turn[5:]
    assert all(t is not None for t in plateau)
    assert max(plateau) - min(plateau) < 0.2 * max(plateau)  # type: ignore[type-var, operator]
    assert window.verdict == "better" and window.saving_ms is not None
    # The three strategies are one family: each verdict reads its Holm-adjusted p.
    tested = [o for o in held.outcomes if o.p_value is not None]
    assert len(tested) == 3 and keep.p_adjusted is None
    assert all(o.p_adjusted is not None and o.p_adjusted >= o.p_value for o in tested)
    assert window.prompt_tokens is not None and keep.prompt_tokens is not None
    assert window.prompt_tokens < keep.prompt_tokens
    # The summaries are counted against their strategies: two for summary:6, one for reset:8.
    assert by_name["summary:6"].summary_calls == 2
    assert by_name["reset:8"].summary_calls == 1
    assert held.dropped["window:4"] == "8 turns left out of the window"
    assert held.dropped["reset:8"] == "1 fresh start, each carrying a summary"
    info, samples, _ = stored["summary:6"]
    assert info.kind == "verify" and info.meta["remedy"] == "conversation"
    assert [s.step for s in samples].count("summary") == 2
    assert sum(s.trace.total_ms or 0 for s in samples) == pytest.approx(
        by_name["summary:6"].total_ms
    )


def test_the_command_writes_json_and_a_page_with_the_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with LabServer(LabConfig(latency=LINEAR)) as lab:
        argv = ["verify", lab.base_url, "-m", "lab-sim", "--remedy", "conversation",
                "--turns", "6", "--tokens-per-turn", "100", "--strategies", "window:2",
                "--db", str(tmp_path / "c.db"), "--max-tokens", "8"]  # fmt: skip
        assert main([*argv, "--json"]) == EXIT_OK
        document = json.loads(capsys.readouterr().out)
        assert main([*argv, "--html", str(tmp_path / "c.html")]) == EXIT_OK
    assert document["schema"] == "latdoc.conversation/1"
    assert [s["strategy"] for s in document["strategies"]] == ["keep", "window:2"]
    assert len(document["strategies"][0]["ttft_ms_by_turn"]) == 6
    window = document["strategies"][1]
    assert window["p_adjusted"] == window["p_value"]  # one strategy: a family of one
    page = (tmp_path / "c.html").read_text()
    assert 'aria-label="Time to first token by turn, per strategy"' in page
    assert "window:2" in page and "<script" not in page
    terminal = capsys.readouterr().out
    assert "window:2: " in terminal and "It dropped" in terminal


def test_a_bad_strategy_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["verify", "http://127.0.0.1:9/v1", "-m", "m", "--remedy", "conversation",
            "--strategies", "forget:3"]  # fmt: skip
    assert main(argv) == EXIT_USAGE
    assert "forget:3" in capsys.readouterr().err


def test_a_conversation_with_an_endpoint_that_cannot_answer_stops_at_once(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{closed_port()}/v1"
    plan = VerifyPlan(
        Endpoint(closed, "m"), VerifyRemedy.CONVERSATION, options=ConversationOptions(turns=6)
    )
    with Store(tmp_path / "c.db") as store:
        held = verify_conversation(plan, store=store)
        kept = sum(len(store.load_run(run_id)[1]) for run_id in held.run_ids.values())
    assert kept == 0, "no turn was sent"
    (note,) = [n.text for n in held.notes]
    assert note.startswith("stopped at the first request: connect")
    assert "nothing accepts connections there" in note


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
