"""``latdoc verify --remedy conversation``: strategies that bound a chat, against the lab."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import closed_port
from latdoc import Endpoint, Store, VerifyPlan
from latdoc.cli import EXIT_OK, main
from latdoc.features.verify import experiments, verify_conversation
from latdoc.features.verify.conversation.send import (
    ConversationOptions,
)
from latdoc.lab.sim import LabConfig, LabProcess, LabServer, LatencyModel

LINEAR = LatencyModel(prefill_base_ms=10.0, prefill_ms_per_token=0.2, decode_ms_per_token=1.0)


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
            experiments.experiment("conversation"),
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


def test_a_conversation_with_an_endpoint_that_cannot_answer_stops_at_once(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{closed_port()}/v1"
    plan = VerifyPlan(
        Endpoint(closed, "m"),
        experiments.experiment("conversation"),
        options=ConversationOptions(turns=6),
    )
    with Store(tmp_path / "c.db") as store:
        held = verify_conversation(plan, store=store)
        kept = sum(len(store.load_run(run_id)[1]) for run_id in held.run_ids.values())
    assert kept == 0, "no turn was sent"
    (note,) = [n.text for n in held.notes]
    assert note.startswith("stopped at the first request: connect")
    assert "nothing accepts connections there" in note
