"""``--api anthropic`` and ``--api responses`` on the command line: the key each reads,
the reasoning phase printed, and a wrong dialect named in the failure."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import FAST, LabFactory
from latdoc.cli import EXIT_OK, EXIT_REQUEST_FAILED, main
from latdoc.lab.sim import LabConfig
from scripted_server import ScriptedServer, sse_response

THINKER = dataclasses.replace(FAST, reasoning_tokens=4)


def test_anthropic_reads_its_own_key_variable_and_prints_the_reasoning(
    lab: LabFactory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-lab-42")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-lab-42")
    with lab(LabConfig(latency=THINKER, api_key="sk-ant-lab-42")) as server:
        anthropic = main(["probe", server.base_url, "-m", "lab-sim", "--api", "anthropic"])
        out = capsys.readouterr().out
        chat = main(["probe", server.base_url, "-m", "lab-sim", "--api", "chat", "--json"])
        refused = json.loads(capsys.readouterr().out)
    assert anthropic == EXIT_OK
    assert "Reasoning" in out and "first answer token" in out and "4 of them reasoning" in out
    assert "sk-ant-lab-42" not in out
    assert chat == EXIT_REQUEST_FAILED
    assert refused["error"]["status"] == 401


def test_responses_json_carries_the_reasoning_phase(
    lab: LabFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab(LabConfig(latency=THINKER)) as server:
        code = main(["probe", server.base_url, "-m", "lab-sim", "--api", "responses", "--json"])
    row = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK
    assert row["dialect"] == "responses" and row["url"].endswith("/v1/responses")
    assert row["reasoning_tokens"] == 4 and row["unknown_events"] == 0
    assert row["ttfr_ms"] == row["ttft_ms"] < row["ttfa_ms"]


def test_an_anthropic_stream_read_as_chat_names_the_dialect(
    capsys: pytest.CaptureFixture[str],
) -> None:
    start = {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 3}}}
    events = [b"event: message_start\ndata: %s\n\n" % json.dumps(start).encode()]
    with ScriptedServer(sse_response(events)) as server:
        code = main(["probe", server.base_url, "-m", "claude-lab", "--api", "chat"])
    captured = capsys.readouterr()
    assert code == EXIT_REQUEST_FAILED
    assert "try --api anthropic" in " ".join((captured.out + captured.err).split())
