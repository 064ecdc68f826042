"""``--api anthropic``, ``responses``, ``gemini``, ``vertex`` and ``azure`` on the
command line: the key each reads (never shown), the reasoning phase printed, the
sending commands in each, and a wrong dialect named in the failure."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from conftest import FAST, LabFactory
from latdoc import Store
from latdoc.cli import EXIT_OK, EXIT_REQUEST_FAILED, main
from latdoc.lab.sim import LabConfig
from scripted_server import ScriptedServer, sse_response

THINKER = dataclasses.replace(FAST, reasoning_tokens=4)


SLOW_THINKER = dataclasses.replace(THINKER, decode_ms_per_token=20.0)


"""Its first answer token 80 ms after its first reasoning one: a client woken late on a
busy machine cannot read the two in one."""


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
    with lab(LabConfig(latency=SLOW_THINKER)) as server:
        argv = ["probe", server.base_url, "-m", "lab-sim", "--api", "responses", "--json"]
        code = main([*argv, "--max-tokens", "8"])
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


GOOGLE_KEY = "AIzaSyLabLabLabLabLabLabLabLabLab1234567"


AZURE_KEY = "0123456789abcdef0123456789abcdef"


THE_KEYS = {
    "gemini": ("GEMINI_API_KEY", GOOGLE_KEY, "/v1beta"),
    "vertex": ("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.lab-access-token", "/v1/projects/p/locations/l"),
    "azure": ("AZURE_OPENAI_API_KEY", AZURE_KEY, ""),
}


@pytest.fixture
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.usefixtures("_no_keys")
@pytest.mark.parametrize("api", list(THE_KEYS))
def test_google_and_azure_read_their_own_key_and_never_show_it(
    lab: LabFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    api: str,
) -> None:
    variable, key, path = THE_KEYS[api]
    monkeypatch.setenv(variable, key)
    db = tmp_path / "runs.db"
    with lab(LabConfig(latency=THINKER, api_key=key)) as server:
        base = server.base_url.removesuffix("/v1") + path
        code = main(["probe", base, "-m", "lab-sim", "--api", api, "--json", "--db", str(db)])
        captured = capsys.readouterr()
        monkeypatch.setenv(variable, key[:-4] + "nope")
        refused = main(["probe", base, "-m", "lab-sim", "--api", api, "--db", str(db)])
        denied = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    row = json.loads(captured.out)
    assert row["dialect"] == api and row["error"] is None
    assert row["reasoning_tokens"] == 4 and row["output_tokens"] == row["reasoning_tokens"] + 64
    assert refused == EXIT_REQUEST_FAILED
    assert str(400 if api == "gemini" else 401) in denied.out + denied.err
    for blob in (
        captured.out,
        captured.err,
        denied.out,
        denied.err,
        db.read_bytes().decode("latin-1"),
    ):
        assert key not in blob and key[:-4] not in blob


@pytest.mark.usefixtures("_no_keys")
@pytest.mark.parametrize(
    ("api", "command"),
    [
        ("gemini", ["diagnose", "--max-requests", "24", "--max-tokens", "8", "--seed", "3"]),
        ("vertex", ["load", "--concurrency", "1,2", "--max-requests", "16", "--max-tokens", "8"]),
        ("azure", ["verify", "--remedy", "reasoning-effort", "--max-requests", "24",
                   "--max-tokens", "8"]),
    ],
)  # fmt: skip
def test_the_sending_commands_speak_google_and_azure(
    lab: LabFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    api: str,
    command: list[str],
) -> None:
    variable, key, path = THE_KEYS[api]
    monkeypatch.setenv(variable, key)
    db = tmp_path / "runs.db"
    with lab(LabConfig(latency=THINKER, api_key=key)) as server:
        base = server.base_url.removesuffix("/v1") + path
        code = main(
            [command[0], base, "-m", "lab-sim", "--api", api, "--db", str(db), *command[1:]]
        )
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    assert key not in captured.out + captured.err
    with Store(db) as store:
        traces = [
            sample.trace for run in store.list_runs() for sample in store.load_run(run.run_id)[1]
        ]
    assert len(traces) >= 8
    assert all(t.dialect == api and t.error is None for t in traces)
    assert all(t.reasoning_tokens is not None for t in traces)
