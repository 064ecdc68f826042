"""An agent's sessions replayed by ``latdoc load --trace`` (the ``agent`` format): each
turn sent with its session's history, the model's own answers in it; where the model
calls a tool, the trace's result handed back as the tool's answer and the model asked
again. The endpoint is a scripted chat server that calls ``lookup`` when the last message
is the user's and answers in text after a tool's result, and keeps every request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, LabFactory
from latdoc import Store
from latdoc.cli import main
from latdoc.lab.sim import LabConfig
from paths import ROOT
from scripted_server import ScriptedServer, Step, sse_response

SAMPLES = ROOT / "src" / "latdoc" / "workload" / "traces" / "samples"

SESSIONS = 20
TURNS = 2


def _event(obj: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def _answer(request: bytes, number: int) -> list[Step]:
    body = json.loads(request.split(b"\r\n\r\n", 1)[1])
    last = body["messages"][-1]
    usage = {"prompt_tokens": 10 * len(body["messages"]), "completion_tokens": 3}
    if last["role"] == "user":
        call = {"index": 0, "id": f"call_{number}", "type": "function",
                "function": {"name": "lookup", "arguments": f'{{"q": "{number}"}}'}}  # fmt: skip
        events = [
            {
                "id": "c",
                "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}],
            },
            {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
    else:
        text = f"answer-{number}"
        events = [
            {"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]},
            {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
    events.append({"id": "c", "choices": [], "usage": usage})
    return sse_response([*map(_event, events), b"data: [DONE]\n\n"])


def test_a_20_session_agent_trace_replays_each_turn_on_the_real_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "agent.jsonl"
    with trace.open("w") as out:
        for s in range(SESSIONS):
            for t in range(TURNS):
                result = {"name": "lookup", "content": f"result {s}.{t}", "ms": 5}
                line = {"session": f"s{s}", "user": f"question {s}.{t}", "tool_results": [result]}
                out.write(json.dumps(line) + "\n")
    answered: list[bytes] = []

    def script(request: bytes) -> list[Step]:
        answered.append(request)
        return _answer(request, len(answered))

    with ScriptedServer(script) as server:
        code = main(["load", server.base_url, "-m", "m", "--trace", str(trace), "--concurrency",
                     "4", "--max-tokens", "16", "--db", str(tmp_path / "a.db")])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    with Store(tmp_path / "a.db") as store:
        (info,) = store.list_runs()
        notes = [n.text for n in store.load_run(info.run_id)[0].notes]
    assert any(
        n.startswith("the sessions' tools held their streams 0.2 s in all (40 results")
        for n in notes
    ), notes
    # Each user turn took two requests, the tool between them: what the user waited
    # holds the tool-calling request and the tool's 5 ms before the answer's first token.
    capsys.readouterr()
    assert main(["report", info.run_id, "--json", "--db", str(tmp_path / "a.db")]) == 0
    turns = json.loads(capsys.readouterr().out)["user_turns"]
    assert [(r["turn"], r["turns"], r["requests_per_turn"]) for r in turns["by_turn"]] == [
        (0, SESSIONS, 2.0),
        (1, SESSIONS, 2.0),
    ]
    every = turns["all"]
    assert every["wait_ms"]["p50"] > every["answer_ttft_ms_p50"] + 5
    bodies = [json.loads(r.split(b"\r\n\r\n", 1)[1]) for r in answered]
    assert len(bodies) == SESSIONS * TURNS * 2
    # Every request offers the tool the trace's results name.
    assert all([t["function"]["name"] for t in b["tools"]] == ["lookup"] for b in bodies)
    sent_answers = set()
    for number, body in enumerate(bodies, 1):
        messages = body["messages"]
        last = messages[-1]
        if last["role"] == "tool":
            # The model's own call, answered with the trace's result for that turn.
            call = messages[-2]["tool_calls"][0]
            assert call["function"] == {
                "name": "lookup",
                "arguments": call["function"]["arguments"],
            }
            assert last["tool_call_id"] == call["id"]
            question = messages[-3]["content"]
            assert last["content"] == "result " + question.removeprefix("question ")
            sent_answers.add(number)
            continue
        session, turn = last["content"].removeprefix("question ").split(".")
        # A later turn carries the earlier ones whole: question, call, result, answer.
        assert len(messages) == 1 + 4 * int(turn)
        for k in range(int(turn)):
            earlier = messages[4 * k : 4 * k + 4]
            assert earlier[0] == {"role": "user", "content": f"question {session}.{k}"}
            assert earlier[2]["content"] == f"result {session}.{k}"
            said = earlier[3]["content"]
            assert earlier[3]["role"] == "assistant" and said.startswith("answer-")
            # The answer is the one the server gave that session's text request.
            assert int(said.removeprefix("answer-")) in sent_answers


def test_an_agent_trace_in_another_dialect_is_refused_before_anything_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedServer(lambda request: sse_response([])) as server:
        code = main(["load", server.base_url, "-m", "m", "--api", "completions", "--trace",
                     str(SAMPLES / "agent.jsonl"), "--db", str(tmp_path / "a.db")])  # fmt: skip
        assert server.requests == []
    assert code == 2
    said = capsys.readouterr().err
    assert "an agent trace replays in a dialect whose tool calls and results latdoc" in said
    assert ", not completions" in said and "gemini" in said and "bedrock" in said


@pytest.mark.parametrize("api", ["anthropic", "responses", "chat", "gemini", "bedrock"])
def test_the_shipped_agent_sample_replays_against_the_lab_in_each_dialect(
    lab: LabFactory,
    tmp_path: Path,
    api: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twenty sessions of two turns: each turn a call answered with ``lookup``, its result
    handed back in the dialect's own shape, and a call answered in text."""
    db = tmp_path / "a.db"
    # Bedrock's routes hang off the host's root, its key a Bedrock API key.
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "lab-key")
    with lab(LabConfig(latency=FAST, answer_tokens=4)) as server:
        url = str(server.base_url)
        url = url.removesuffix("/v1") if api == "bedrock" else url
        code = main(["load", url, "-m", "lab-sim", "--api", api, "--trace",
                     str(SAMPLES / "agent.jsonl"), "--concurrency", "4", "--max-tokens", "16",
                     "--db", str(db)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    with Store(db) as store:
        (info,) = store.list_runs()
        _, samples, _ = store.load_run(info.run_id)
    traces = [s.trace for s in samples]
    assert len(traces) == 80 and all(t.ok for t in traces)
    finishes = sorted(t.finish_reason or "" for t in traces)
    assert finishes == ["stop"] * 40 + ["tool_calls"] * 40
    assert {c.name for t in traces for c in t.tool_calls} == {"lookup"}


def test_find_max_on_an_agent_trace_judges_the_turn_the_user_waits_on(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every request's own TTFT meets a 250 ms median, but each user turn holds a 300 ms
    tool between its tool call and its answer: judged on the turns, no level meets it;
    at 2 s, the levels tried all do."""
    trace = tmp_path / "agent.jsonl"
    with trace.open("w") as out:
        for s in range(6):
            for t in range(2):
                result = {"name": "lookup", "content": f"result {s}.{t}", "ms": 300}
                line = {"session": f"s{s}", "user": f"question {s}.{t}", "tool_results": [result]}
                out.write(json.dumps(line) + "\n")
    db = tmp_path / "a.db"

    def find_max(limit: str) -> dict[str, Any]:
        code = main(["load", server.base_url, "-m", "lab-sim", "--trace", str(trace),
                     "--find-max", "--slo", f"ttft_p50={limit}", "--find-max-limit", "2",
                     "--duration-per-level", "1.5", "--max-tokens", "8", "--json",
                     "--db", str(db)])  # fmt: skip
        out = capsys.readouterr()
        assert code == 0, out.err
        document: dict[str, Any] = json.loads(out.out)
        return document

    with lab(LabConfig(latency=FAST, answer_tokens=4)) as server:
        tight = find_max("250ms")
        loose = find_max("2s")
    found = tight["find_max"]
    assert found["judged_on"] == "user_turns"
    assert found["best_streams"] is None and found["broke"] == "prefill"
    (first,) = [p for p in found["probes"] if p["streams"] == 1]
    (reading,) = first["readings"]
    assert reading["n"] >= 2 and reading["value_ms"] > 300
    # Each request alone met the limit: the turn's wait is what failed it.
    ttft_p50 = next(lv for lv in tight["levels"] if lv["window"]["concurrency"] == 1)
    assert ttft_p50["ttft_ms"]["p50"] < 250
    assert "on the user's turns" in found["sentence"]
    assert loose["find_max"]["best_streams"] == 2
    assert all(p["passed"] for p in loose["find_max"]["probes"])
