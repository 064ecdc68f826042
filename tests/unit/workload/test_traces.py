"""Traces of real workloads read one request at a time: Mooncake, ShareGPT, BurstGPT and
latdoc's own export, each recognised by its first line; a trace that cannot be
replayed is one error naming the file and the line."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from latdoc import UsageError
from latdoc.workload.traces import names, open_trace, read_trace
from paths import ROOT

SAMPLES = ROOT / "src" / "latdoc" / "workload" / "traces" / "samples"


def _read(text: str | bytes, fmt: str | None = None) -> list:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return list(read_trace(io.BytesIO(data), "t.trace", fmt))


def test_the_shipped_samples_are_read_by_their_first_line() -> None:
    mooncake = list(open_trace(SAMPLES / "mooncake.jsonl"))
    assert len(mooncake) == 120
    assert mooncake[0].at_s == 0.0
    times = [r.at_s for r in mooncake]
    assert None not in times and times == sorted(times)
    firsts = {r.blocks[:2] for r in mooncake}
    assert len(firsts) == 3, "three shared prefixes, each met by many requests"
    burst = list(open_trace(SAMPLES / "burstgpt.csv"))
    assert len(burst) == 120 and burst[0].line == 2
    chats = list(open_trace(SAMPLES / "sharegpt.json"))
    sessions = {r.session for r in chats}
    assert len(sessions) == 4
    first = [r for r in chats if r.session == "latdoc-sample-1"]
    assert [r.turn for r in first] == [0, 1, 2]
    assert first[0].text is not None and first[0].text.startswith("Our chat assistant")
    assert all(r.at_s is None for r in chats)


def test_the_shipped_agent_sample_is_twenty_sessions_of_turns_with_tool_results() -> None:
    turns = list(open_trace(SAMPLES / "agent.jsonl"))
    assert len(turns) == 40 and len({r.session for r in turns}) == 20
    first = [r for r in turns if r.session == "agent-sample-0"]
    assert [r.turn for r in first] == [0, 1] and all(r.at_s is None for r in turns)
    (result,) = first[1].tool_results
    assert (result.name, result.ms) == ("lookup", 200.0)
    assert result.content.startswith("The word of session 0, turn 1")
    assert first[0].text is not None and first[0].text.startswith("Session 0 turn 0:")
    # The turn, where a line leaves it out, counts on from the session's last.
    counted = _read('{"session": 7, "user": "a"}\n{"session": 7, "user": "b"}\n')
    assert [(r.session, r.turn, r.tool_results) for r in counted] == [("7", 0, ()), ("7", 1, ())]


def test_aiperfs_multi_turn_conversations_are_sessions_of_turns() -> None:
    """AIPerf's ``multi_turn`` dataset: a leading system turn of text alone is the
    conversation's system prompt, not a turn; each turn's delay and answer length kept."""
    lines = [
        {"session_id": "chat_1", "turns": [
            {"role": "system", "text": "Be terse."},
            {"text": "What is machine learning?", "output_length": 50},
            {"text": "Give me an example.", "delay": 1000},
        ]},
        {"session_id": 2, "turns": [{"text": "Hi there"}]},
    ]  # fmt: skip
    turns = _read("".join(json.dumps(line) + "\n" for line in lines))
    assert [(r.session, r.turn, r.text) for r in turns] == [
        ("chat_1", 0, "What is machine learning?"),
        ("chat_1", 1, "Give me an example."),
        ("2", 0, "Hi there"),
    ]
    assert [r.output_tokens for r in turns] == [50, 64, 64]
    assert [r.delay_ms for r in turns] == [0.0, 1000.0, 0.0]
    assert [r.system for r in turns] == ["Be terse.", "Be terse.", None]
    assert all(r.at_s is None for r in turns)
    # A system turn that carries more than its text is a turn of its own, as AIPerf has it.
    kept = _read(json.dumps({"session_id": "c", "turns": [
        {"role": "system", "text": "x", "delay": 5}, {"text": "y"}]}) + "\n")  # fmt: skip
    assert [r.text for r in kept] == ["x", "y"] and kept[0].system is None


def test_sharegpt_as_json_lines_and_latdoc_exports_are_read_too(tmp_path: Path) -> None:
    line = {"id": "a", "conversations": [{"from": "human", "value": "one two three"},
                                         {"from": "gpt", "value": "four five"}]}  # fmt: skip
    (turn,) = _read(json.dumps(line) + "\n")
    assert (turn.session, turn.input_tokens, turn.output_tokens) == ("a", 3, 2)
    export = [
        {"schema": "latdoc-requests", "version": 1, "kind": "run", "run": {}},
        {"schema": "latdoc-requests", "version": 1, "kind": "request", "ok": True,
         "started_ns": 5_000_000_000, "prompt_tokens": 300, "output_tokens": 20},
        {"schema": "latdoc-requests", "version": 1, "kind": "request", "ok": True,
         "started_ns": 5_250_000_000, "prompt_tokens": None, "target_prompt_tokens": 512,
         "output_tokens": 8},
    ]  # fmt: skip
    rows = _read("\n".join(json.dumps(r) for r in export))
    assert [(r.at_s, r.input_tokens, r.output_tokens) for r in rows] == [
        (0.0, 300, 20),
        (0.25, 512, 8),
    ]


def test_gzip_and_a_byte_order_mark_are_read() -> None:
    text = (SAMPLES / "burstgpt.csv").read_text(encoding="utf-8")
    with_bom = "\ufeff" + text
    assert len(_read(gzip.compress(with_bom.encode("utf-8")))) == 120
    assert len(_read(with_bom)) == 120


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '{"input_length": 10, "output_length": 5}\n{"input_length": 10}\n',
            "t.trace:2: missing 'output_length'",
        ),
        (
            '{"timestamp": 5, "input_length": 10, "output_length": 5}\n'
            '{"timestamp": 2, "input_length": 10, "output_length": 5}\n',
            "t.trace:2: its time is before the request before it",
        ),
        (
            '{"timestamp": -1, "input_length": 10, "output_length": 5}\n',
            "t.trace:1: timestamp must be a whole number ≥ 0",
        ),
        ('{"input_length": "ten", "output_length": 5}\n', "t.trace:1: input_length must be"),
        ('{"input_length": 10, "output_length": 5}\n{oops\n', "t.trace:2: invalid JSON"),
        ("Timestamp,Request tokens,Response tokens\n1.0,20\n", "t.trace:2: 2 fields"),
        ("Timestamp,Request tokens,Response tokens\n-1,20,5\n", "must not be negative"),
        ('[{"id": 1, "conversations": 5}]', "expected an object with a list of conversations"),
        ('{"session": "s", "user": ""}\n', "t.trace:1: user must be the turn's text"),
        ('{"session": true, "user": "hi"}\n', "t.trace:1: session must be a name or a number"),
        (
            '{"session": "s", "user": "hi", "tool_results": [{"name": "x", "ms": -1}]}\n',
            "t.trace:1: tool result 1 needs a name, its content as text and its time",
        ),
        ('{"session": "s", "user": "hi", "tool_results": {}}\n', "tool_results must be a list"),
        ('{"session_id": "c", "turns": []}\n', "t.trace:1: turns must be a list of turns"),
        ('{"session_id": "c", "turns": [{"text": " "}]}\n', "t.trace:1 (turn 1): a turn needs"),
        (
            '{"session_id": "c", "turns": [{"text": "a"}, {"text": "b", "delay": -5}]}\n',
            "t.trace:1 (turn 2): delay must be a number of ms",
        ),
        (
            '{"session_id": "c", "turns": [{"text": "a", "output_length": 0}]}\n',
            "output_length must be a whole number ≥ 1",
        ),
        ("hello world\n", "not a trace latdoc knows"),
        ("", "empty"),
    ],
)
def test_a_trace_that_cannot_be_replayed_is_one_error_naming_the_line(text: str, said: str) -> None:
    with pytest.raises(UsageError) as caught:
        _read(text)
    assert said in str(caught.value)


def test_a_format_named_by_hand_and_a_wrong_name() -> None:
    line = '{"input_length": 10, "output_length": 5}\n'
    assert len(_read(line, "mooncake")) == 1
    with pytest.raises(
        UsageError, match="use one of mooncake, agent, aiperf, sharegpt, burstgpt, latdoc"
    ):
        _read(line, "alpaca")
    assert names() == ("mooncake", "agent", "aiperf", "sharegpt", "burstgpt", "latdoc")


def test_a_huge_trace_is_read_as_it_is_needed(tmp_path: Path) -> None:
    """A 20 MB trace: its first requests come after reading a small part of it."""
    path = tmp_path / "big.jsonl"
    line = json.dumps({"timestamp": 0, "input_length": 100, "output_length": 10,
                       "hash_ids": list(range(40))}) + "\n"  # fmt: skip
    with path.open("w") as f:
        for _ in range(20 * 2**20 // len(line)):
            f.write(line)
    raw = path.open("rb")
    requests = read_trace(raw, str(path))
    firsts = [next(requests) for _ in range(5)]
    assert len(firsts) == 5
    assert raw.tell() < 2**20
    requests.close()
    assert raw.closed
