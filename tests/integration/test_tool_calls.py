"""Tool calls on the wire: one tools file offered in every dialect that has tool calls,
the lab answering with a call streamed as each provider streams it, and the record
keeping the call's name, its arguments' size, its first part and its last byte."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import FAST, LabFactory
from latdoc import Endpoint, ProbeSession, RequestTrace, Store
from latdoc.cli import main
from latdoc.lab.sim import LabConfig, output_text
from latdoc.probe import Tool, dialects
from latdoc.probe.dialects import DialectSpec
from latdoc.store.codec import trace_from_record, trace_to_record
from machine_noise import MachineNoise
from packet_capture import LoopbackCapture, can_capture

KEY = "tools-key-0123456789"
TOOLS = (Tool("lookup", "Find a word", {"type": "object", "properties": {"q": {}}}),)
ANSWER = 5


def _base(root: str, dialect: DialectSpec) -> str:
    return {
        dialects.gemini.SPEC: f"{root}/v1beta",
        dialects.bedrock.SPEC: root,
    }.get(dialect, f"{root}/v1")


def _probe(base_url: str, dialect: DialectSpec, tools: tuple[Tool, ...]) -> RequestTrace:
    async def go() -> RequestTrace:
        endpoint = Endpoint(base_url, "lab-sim", dialect, api_key=KEY, tools=tools)
        async with ProbeSession(endpoint) as session:
            return await session.request("Find the word.", 16)

    return asyncio.run(go())


@pytest.mark.parametrize("name", ["anthropic", "bedrock", "chat", "gemini", "responses"])
def test_a_tool_call_is_recorded_with_its_name_size_and_last_byte(
    lab: LabFactory, name: str
) -> None:
    dialect = dialects.resolve(name)
    with lab(LabConfig(latency=FAST, api_key=KEY, answer_tokens=ANSWER)) as server:
        root = server.base_url.removesuffix("/v1")
        trace = _probe(_base(root, dialect), dialect, TOOLS)
        plain = _probe(_base(root, dialect), dialect, ())
    assert trace.error is None, trace.error
    (call,) = trace.tool_calls
    # The lab's arguments are {"words": "<the answer's words>"}, streamed a word an event.
    arguments = json.dumps({"words": output_text(ANSWER)}, separators=(",", ":"))
    assert (call.name, call.argument_chars) == ("lookup", len(arguments))
    assert trace.first_output_kind == "tool_call" and trace.finish_reason == "tool_calls"
    assert trace.first_token_ns == trace.first_tool_call_ns
    assert trace.first_tool_call_ns is not None and call.first_ns <= trace.first_tool_call_ns
    # The arguments' last byte is the last chunk of output: nothing followed it.
    assert call.last_ns == trace.chunks[-1].t_ns
    assert trace.tool_arguments_done_ms == call.last_ns / 1e6
    assert trace_from_record(trace_to_record(trace)) == trace
    # Without tools, the same endpoint answers text and the record holds no call.
    assert plain.error is None and plain.tool_calls == () and plain.first_tool_call_ns is None
    assert plain.first_output_kind == "text"


@pytest.mark.skipif(not can_capture(), reason="a packet capture needs root (CAP_NET_RAW)")
@pytest.mark.parametrize(
    ("name", "marker"), [("chat", b'"tool_calls"'), ("anthropic", b'"tool_use"')]
)
def test_the_first_tool_call_is_stamped_within_a_millisecond_of_the_wire(
    lab: LabFactory, name: str, marker: bytes, machine_noise: MachineNoise
) -> None:
    """The segment that carried the first tool-call event, as the kernel saw it arrive on
    loopback, against the probe's stamp of that event: within 1 ms on a quiet machine,
    widened by the scheduling noise the test measured of its own machine (beside a CPU
    hog the stamp came 1.95 ms after the segment)."""
    dialect = dialects.resolve(name)
    with lab(LabConfig(latency=FAST, answer_tokens=ANSWER)) as server:
        port = urlsplit(server.base_url).port
        assert port is not None
        with LoopbackCapture(port) as capture:
            trace = _probe(server.base_url, dialect, TOOLS)
    assert trace.error is None and trace.first_tool_call_ns is not None
    wire = capture.first(marker)
    gap_ms = (trace.t0_ns + trace.first_tool_call_ns - wire.t_ns) / 1e6
    print(f"{name}: first tool call stamped {gap_ms:+.3f} ms from the wire")
    assert abs(gap_ms) < machine_noise.bound_ms(1.0, 10.0)


def test_probe_offers_a_tools_file_and_prints_the_call(lab: LabFactory, tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "lookup", "input_schema": {"type": "object"}}]))
    with lab(LabConfig(latency=FAST, answer_tokens=ANSWER)) as server:
        command = [sys.executable, "-m", "latdoc", "probe", server.base_url, "-m", "lab-sim"]
        shown = subprocess.run(
            [*command, "--api", "anthropic", "--tools", str(tools)],
            capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "120"},
        )  # fmt: skip
        document = subprocess.run(
            [*command, "--tools", str(tools), "--json"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "tool calls (first output): lookup(" in shown.stdout
    assert "arguments done at" in shown.stdout
    assert document.returncode == 0, document.stderr
    trace = json.loads(document.stdout.splitlines()[0])
    assert trace["first_output_kind"] == "tool_call"
    assert [c["name"] for c in trace["tool_calls"]] == ["lookup"]
    assert trace["tool_arguments_done_ms"] == trace["tool_calls"][0]["last_ms"]


def test_a_bad_tools_file_stops_the_command_before_anything_is_sent(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text('[{"name": "a b"}]')
    done = subprocess.run(
        [sys.executable, "-m", "latdoc", "probe", "http://127.0.0.1:9/v1", "-m", "m",
         "--tools", str(tools)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"tools file {tools}: tool 1 needs a name" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["diagnose", "--max-requests", "12", "--json"],
        ["load", "--concurrency", "1,2", "--duration-per-level", "1"],
    ],
    ids=lambda c: c[0],
)
def test_diagnose_and_load_offer_the_tools_and_keep_every_call(
    lab: LabFactory, tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "name": "lookup", "parameters": {}}]))
    db = tmp_path / "t.db"
    with lab(LabConfig(latency=FAST, answer_tokens=ANSWER)) as server:
        verb, *rest = command
        code = main(
            [verb, server.base_url, "-m", "lab-sim", "--api", "responses", "--tools", str(tools),
             "--max-tokens", "16", "--db", str(db), *rest]
        )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    with Store(db) as store:
        (info,) = store.list_runs()
        _, samples, _ = store.load_run(info.run_id)
    traces = [s.trace for s in samples if s.trace.ok]
    assert traces and all(t.first_output_kind == "tool_call" for t in traces)
    assert {c.name for t in traces for c in t.tool_calls} == {"lookup"}
