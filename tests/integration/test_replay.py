"""``latdoc load --trace``: a trace of real traffic replayed against the lab at its own
times, its shared prefixes hitting the lab's prefix cache, its conversations carried
turn by turn; a trace that cannot be replayed is refused before anything is sent."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import LabFactory
from latdoc.cli import main
from latdoc.lab.sim import LabConfig, LatencyModel, requests_received
from latdoc.records import Step
from latdoc.store import Store
from paths import ROOT
from scripted_server import ScriptedServer, sse_response
from scripted_server import Step as ScriptStep

SAMPLES = ROOT / "src" / "latdoc" / "workload" / "traces" / "samples"
MODEL = LatencyModel(prefill_base_ms=10.0, prefill_ms_per_token=0.05, decode_ms_per_token=1.0)


def _run(db: Path) -> tuple[list, tuple]:
    with Store(db) as store:
        (info,) = store.list_runs(limit=1)
        _, samples, _ = store.load_run(info.run_id)
        return samples, tuple(n.text for n in store.run_info(info.run_id).notes)


def _run_id(db: Path) -> str:
    with Store(db) as store:
        (info,) = store.list_runs(limit=1)
        return info.run_id


def _client(db: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """The replayed level's client measure, as the run's report gives it."""
    capsys.readouterr()
    with Store(db) as store:
        (info,) = store.list_runs(limit=1)
    assert main(["report", info.run_id, "--json", "--db", str(db)]) == 0
    (level,) = json.loads(capsys.readouterr().out)["levels"]
    client = level["window"]["client"]
    assert client is not None, "a replayed level says what sending it cost"
    assert 0 < client["cpu_share"] < 2 and client["loop_lag_ms_p99"] is not None
    return client


def test_a_mooncake_trace_keeps_its_schedule_and_its_shared_prefixes_hit(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    trace = SAMPLES / "mooncake.jsonl"
    with lab(LabConfig(latency=MODEL, prefix_cache=True)) as server:
        code = main(["load", server.base_url, "-m", "lab-sim", "--trace", str(trace),
                     "--speed", "8", "--max-tokens", "16", "--db", str(db)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    samples, notes = _run(db)
    assert len(samples) == 120 and all(s.step is Step.ARRIVALS for s in samples)
    assert all(s.trace.ok for s in samples)
    starts = sorted(s.trace.started_ns or 0 for s in samples)
    span_s = (starts[-1] - starts[0]) / 1e9
    assert 32.4 / 8 * 0.9 < span_s < 32.4 / 8 + 1.5, "sent over the trace's span ÷ 8"
    lag = next(n for n in notes if n.startswith("the trace's schedule at 8×"))
    assert "120 requests sent" in lag
    cache = next(n for n in notes if n.startswith("prefix cache:"))
    hits, of = (int(w) for w in cache.split(":")[1].split()[:3:2])
    assert of == 117 and hits >= 110, cache
    assert cache.endswith("0 of 3 whose block was new")
    assert _client(db, capsys)["processes"] == 1


def test_conversations_are_sent_turn_by_turn_with_their_history(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    with lab(LabConfig(latency=MODEL, prefix_cache=True)) as server:
        code = main(["load", server.base_url, "-m", "lab-sim", "--trace",
                     str(SAMPLES / "sharegpt.json"), "--concurrency", "2", "--max-tokens", "24",
                     "--db", str(db)])  # fmt: skip
    assert code == 0
    samples, _ = _run(db)
    assert len(samples) == 8 and all(s.step is Step.LOAD and s.concurrency == 2 for s in samples)
    by_prompt = sorted(s.trace.prompt_tokens or 0 for s in samples)
    first = next(s for s in samples if s.target_prompt_tokens == 13)
    third = max(samples, key=lambda s: s.trace.prompt_tokens or 0)
    assert (third.trace.prompt_tokens or 0) > 100 > (first.trace.prompt_tokens or 0)
    assert by_prompt[-1] > 3 * by_prompt[0]
    assert 0 <= _client(db, capsys)["read_together"] <= 1
    # Each conversation's turn is one request: what its user waited is its own TTFT.
    assert main(["report", _run_id(db), "--json", "--db", str(db)]) == 0
    turns = json.loads(capsys.readouterr().out)["user_turns"]
    by_turn = turns["by_turn"]
    assert [r["turn"] for r in by_turn] == [0, 1, 2, 3][: len(by_turn)] and len(by_turn) >= 3
    assert sum(r["turns"] for r in by_turn) == turns["all"]["turns"] == len(samples)
    assert all(r["requests_per_turn"] == 1 for r in by_turn)
    for row in by_turn:
        wait, ttft = row["wait_ms"]["p50"], row["answer_ttft_ms_p50"]
        assert wait == pytest.approx(ttft, abs=0.01)
        assert row["answer_tpot_ms_p50"] is not None
    # The later turns resend the history, which the lab's prefix cache served.
    assert by_turn[2]["answer_cached_tokens_p50"] > 0


def test_a_trace_that_cannot_be_replayed_sends_nothing(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    good = '{"timestamp": 0, "input_length": 10, "output_length": 5}\n'
    bad.write_text(good * 50 + '{"timestamp": 10, "input_length": 10}\n')
    with lab(LabConfig(latency=MODEL)) as server:
        code = main(["load", server.base_url, "-m", "lab-sim", "--trace", str(bad),
                     "--db", str(tmp_path / "r.db")])  # fmt: skip
        assert server.app is not None
        assert requests_received(server.app) == 0
    assert code == 2
    assert f"{bad}:51: missing 'output_length'" in capsys.readouterr().err
    for extra, said in ((["--rate", "2"], "leave out --rate"),
                        (["--processes", "2"], "leave out --processes")):  # fmt: skip
        assert main(["load", "http://127.0.0.1:9/v1", "-m", "m", "--trace",
                     str(SAMPLES / "burstgpt.csv"), *extra]) == 2  # fmt: skip
        assert said in capsys.readouterr().err


def test_diagnose_a_trace_reads_its_own_lengths_as_recorded_traffic(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """BurstGPT's prompts run from ~80 to ~4,500 tokens; at 0.12 ms a token of prefill
    (twice the reference profile's slow edge of healthy) on a base of 300 ms the length
    curve is fitted on the trace's own lengths. The verdict is for a request of the
    replayed requests' median prompt (~350 tokens), where what the prefill adds past
    healthy is too little to notice; told the seed's 2K (``--prompt-tokens 2048``), it
    names input length."""
    import io
    import statistics

    from latdoc import Kind, diagnose_traffic, rediagnose
    from latdoc.report import make_console, render_diagnosis

    slow_prefill = LatencyModel(prefill_base_ms=300.0, prefill_ms_per_token=0.12,
                                decode_ms_per_token=1.0)  # fmt: skip
    db = tmp_path / "r.db"
    with lab(LabConfig(latency=slow_prefill)) as server:
        code = main(["diagnose", server.base_url, "-m", "lab-sim", "--trace",
                     str(SAMPLES / "burstgpt.csv"), "--speed", "8", "--max-tokens", "16",
                     "--max-requests", "500", "--json", "--db", str(db)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert doc["traffic_source"]["kind"] == "replay"
    with Store(db) as store:
        (info,) = store.list_runs()
        _, samples, _ = store.load_run(info.run_id)
        recorded = rediagnose(store, info.run_id).diagnosis
        out = io.StringIO()
        make_console(out, width=200).print(render_diagnosis(recorded))
        told = diagnose_traffic(store, info.run_id, prompt_tokens=2048).diagnosis
    counted = [t for s in samples if (t := s.trace.prompt_tokens) is not None]
    median = round(statistics.median(counted))
    assert 200 < median < 600, counted
    assert doc["workload"]["prompt_tokens"] == median
    assert doc["workload"]["source"] == "recorded" and not doc["workload"]["told"]
    assert doc["verdict"]["primary"] != "input_length"
    assert doc["longer_prompt"] is not None, "the trace's longer prompts would name it"
    text = " ".join(out.getvalue().split())
    assert f"Shares are of a typical request of {median:,} prompt tokens" in text
    assert "your recorded requests' median prompt: --prompt-tokens N for another" in text
    assert told.verdict.primary is Kind.INPUT_LENGTH
    assert told.workload is not None and told.workload.source == "told"
    assert told.workload.prompt_tokens == 2048
    assert info.kind == "instrument" and len(samples) == 120
    assert all(s.step is Step.TRAFFIC for s in samples)
    assert max(s.concurrency for s in samples) >= 1
    notes = " ".join(n["text"] for n in doc["notes"])
    assert "replayed from a trace" in notes and "nothing was sent" not in notes


def test_aiperf_conversations_carry_their_system_prompt_and_wait_their_delay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """AIPerf's ``multi_turn`` file: each turn sent with the system prompt and the history,
    its ``delay`` waited after the last answer before it is sent (read on the server's
    own clock: the second turn of a session arrives 300 ms or more after the first)."""
    trace = tmp_path / "conversations.jsonl"
    lines = [
        {"session_id": f"c{s}", "turns": [
            {"role": "system", "text": "Be terse."},
            {"text": f"first {s}"},
            {"text": f"second {s}", "delay": 300},
        ]}
        for s in range(3)
    ]  # fmt: skip
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
    arrived: dict[str, float] = {}
    answered: list[list[dict[str, str]]] = []

    def script(request: bytes) -> list[ScriptStep]:
        messages = json.loads(request.split(b"\r\n\r\n", 1)[1])["messages"]
        arrived[messages[-1]["content"]] = time.monotonic()
        answered.append(messages)
        events = [{"choices": [{"index": 0, "delta": {"content": f"answer-{len(answered)}"}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]  # fmt: skip
        return sse_response([*(f"data: {json.dumps(e)}\n\n".encode() for e in events),
                             b"data: [DONE]\n\n"])  # fmt: skip

    db = tmp_path / "r.db"
    with ScriptedServer(script) as server:
        code = main(["load", server.base_url, "-m", "m", "--trace", str(trace),
                     "--concurrency", "3", "--max-tokens", "8", "--db", str(db)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert len(answered) == 6
    for messages in answered:
        assert messages[0] == {"role": "system", "content": "Be terse."}
        last = messages[-1]["content"]
        if last.startswith("second"):
            # The first turn and the endpoint's own answer to it came before.
            assert messages[1] == {"role": "user", "content": "first " + last.split()[1]}
            assert messages[2]["role"] == "assistant"
            assert messages[2]["content"].startswith("answer-")
    for s in range(3):
        assert arrived[f"second {s}"] - arrived[f"first {s}"] >= 0.3
    samples, notes = _run(db)
    assert any(n.startswith("the sessions' think times held their streams 0.9 s") for n in notes)
    # Each turn is due when the turn before ended and its think time passed, the first
    # when its stream began: it left within a fraction of the 300 ms think time (due at
    # the last answer's end alone, a second turn would read 300 ms late).
    lates = [s.trace.late_ms for s in samples]
    assert None not in lates and max(lates) < 150, lates
