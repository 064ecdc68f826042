"""An agent of the OpenAI Agents SDK (``openai-agents``) with two tools, run against the
lab with one slow tool and a context that grows about 1K tokens a turn over 8 turns, its
spans traced by OpenInference's openai-agents and openai instrumentations or by
OpenLLMetry's (the real packages, ``tests/otlp_agent.py``), diagnosed with ``latdoc
diagnose --from-otlp``: the slow tool and the context's growth are named with their
shares of the run's wall clock, and the window's saving is stated, against the lab's own
prefill cost."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, LabFactory
from latdoc import Store
from latdoc.cli import main
from latdoc.lab.sim import LabConfig
from paths import TESTS

AGENT = TESTS / "otlp_agent.py"
TURNS = 8
WORDS = 1000
TOOL_S = 0.4
PREFILL = dataclasses.replace(
    FAST, prefill_base_ms=10.0, prefill_ms_per_token=0.05, decode_ms_per_token=1.0
)
"""A twentieth of a millisecond a prompt token: 60 ms at the first turn, ~0.5 s at the
last, the growth a user would see on a hosted model's long contexts."""


def _agent_run(
    lab: LabFactory, config: LabConfig, spans: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """The agent run as its own process against a lab of ``config``: its span file."""
    with lab(config) as server:
        done = subprocess.run(
            [sys.executable, str(AGENT), server.base_url, str(spans), *args],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _diagnosed(spans: Path, db: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = main(["diagnose", "--from-otlp", str(spans), "--json", "--db", str(db)])
    out = capsys.readouterr()
    assert code == 0, out.err
    document: dict[str, Any] = json.loads(out.out)
    return document


@pytest.mark.parametrize("traced_by", ["agents", "agents-openllmetry"])
def test_an_agent_run_names_its_slow_tool_and_its_growing_context(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], traced_by: str
) -> None:
    """Traced by OpenInference's openai-agents and openai instrumentations, or by
    OpenLLMetry's."""
    spans = tmp_path / "agent.jsonl"
    # OpenInference stamps its first-token event at the stream's first chunk, whatever it
    # carries: the lab holds its role-only chunk until the prefill ends, as OpenAI does.
    config = LabConfig(latency=PREFILL, answer_tokens=8, headers_after_prefill=True)
    done = _agent_run(lab, config, spans, "--turns", str(TURNS), "--words", str(WORDS),
                      "--tool-s", str(TOOL_S), "--usage", "--framework", traced_by)  # fmt: skip
    assert json.loads(done.stdout)["model_calls"] == 2 * TURNS
    document = _diagnosed(spans, tmp_path / "a.db", capsys)
    assert document["requests"] == 2 * TURNS  # each call once, though two spans hold it
    agent = document["agent"]
    assert (agent["model_calls"], agent["tool_calls"], len(agent["turns"])) == (16, 8, 8)
    (lookup,) = agent["tools"]
    assert lookup["name"] == "lookup" and lookup["calls"] == TURNS
    assert lookup["total_ms"] >= TURNS * TOOL_S * 1000
    assert agent["shares"]["tools"] == pytest.approx(agent["tool_ms"] / agent["wall_ms"])
    assert sum(agent["shares"].values()) == pytest.approx(1.0)
    context = agent["context"]
    growth = context["growth_tokens_per_turn"]
    assert growth["low"] <= growth["value"] <= growth["high"] and 900 < growth["value"] < 1300
    # The TTFT a prompt token costs holds the lab's own prefill cost, give or take the
    # longer body's upload and parse per token (1% of it on a quiet machine, where the
    # lab's jitter-free prefill leaves the interval about that narrow): 2% is allowed.
    cost = context["ttft_ms_per_prompt_token"]
    print(
        f"a prompt token: {cost['value']:.5f} ms ({cost['low']:.5f} to {cost['high']:.5f})",
        file=sys.stderr,
    )
    assert cost["low"] <= cost["value"] <= cost["high"]
    assert cost["low"] / 1.02 <= PREFILL.prefill_ms_per_token <= cost["high"] * 1.02
    window = context["remedies"][0]
    assert window["name"] == "window" and window["saving_ms"] is not None
    assert window["saving_low_ms"] <= window["saving_ms"] <= window["saving_high_ms"]
    assert context["noticeable"]
    # The run keeps its tree: `latdoc report` shows the same run again.
    assert main(["report", document["run_id"], "--json", "--db", str(tmp_path / "a.db")]) == 0
    assert json.loads(capsys.readouterr().out)["agent"] == agent
    assert main(["diagnose", "--from-otlp", str(spans), "--db", str(tmp_path / "a.db")]) == 0
    shown = capsys.readouterr().out
    assert "tool lookup: 8 calls" in shown and "a window of the last 2 turns:" in shown
    assert "the context's growth is a noticeable share of the run" in shown


def test_a_pydantic_ai_agent_traced_in_the_genai_conventions_is_read_as_a_run(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pydantic-ai's own instrumentation writes ``invoke_agent``, ``chat`` and
    ``execute_tool`` spans; its agent does not stream, so no call has a first token and
    no context remedy is given a number."""
    spans = tmp_path / "agent.jsonl"
    _agent_run(lab, LabConfig(latency=PREFILL, answer_tokens=8), spans, "--framework",
               "pydantic-ai", "--turns", "3", "--words", "200", "--tool-s", "0.2")  # fmt: skip
    agent = _diagnosed(spans, tmp_path / "p.db", capsys)["agent"]
    assert (agent["model_calls"], agent["tool_calls"], len(agent["turns"])) == (6, 3, 3)
    assert [(t["name"], t["calls"]) for t in agent["tools"]] == [("lookup", 3)]
    assert all(t["ttft_ms"] is None for t in agent["turns"])
    assert agent["context"]["ttft_ms_per_prompt_token"] is None
    assert all(r["saving_ms"] is None for r in agent["context"]["remedies"])
    prompts = [t["prompt_tokens"] for t in agent["turns"]]
    assert prompts == sorted(prompts) and prompts[0] < prompts[-1]


def test_an_agents_client_instrumented_by_latdoc_gives_each_call_its_phases(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same pydantic-ai agent, its client wrapped by ``latdoc.instrument(otel=True)``:
    latdoc's span of each call sits inside the framework's and is the one read, with the
    phases latdoc measured (the connection's setup among them)."""
    spans, kept = tmp_path / "agent.jsonl", tmp_path / "kept.db"
    _agent_run(lab, LabConfig(latency=PREFILL, answer_tokens=8), spans, "--framework",
               "pydantic-ai", "--turns", "3", "--words", "50", "--tool-s", "0.1",
               "--latdoc", str(kept))  # fmt: skip
    document = _diagnosed(spans, tmp_path / "p.db", capsys)
    assert document["traffic_source"]["recorded_by"].startswith("latdoc")
    assert document["requests"] == 6 and document["agent"]["model_calls"] == 6
    assert document["agent"]["tool_calls"] == 3
    with Store(tmp_path / "p.db") as store:
        (info,) = store.list_runs()
        _, samples, _ = store.load_run(info.run_id)
    assert sum(1 for s in samples if s.trace.new_connection) >= 1
    assert all(s.trace.connect_done_ns is not None for s in samples if s.trace.new_connection)
