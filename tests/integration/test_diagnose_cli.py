"""``latdoc diagnose``, ``runs`` and ``report`` end to end against the lab."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import LabFactory, closed_port, wait_for_samples
from latdoc.cli import main
from latdoc.errors import cannot_answer
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.workload import planned_requests

QUICK = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.02, decode_ms_per_token=1.0)


SECRET = "sk-diag-secret-5f4e3d2c1b"


def test_diagnose_json_report_and_store(
    lab: LabFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = tmp_path / "runs.db"
    html = tmp_path / "report.html"
    monkeypatch.setenv("LAB_KEY", SECRET)
    with lab(LabConfig(latency=QUICK, api_key=SECRET)) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--json",
             "--html", str(html), "--max-requests", "30", "--api-key-env", "LAB_KEY",
             "--max-tokens", "8", "--seed", "3"]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert set(doc) >= {"verdict", "shares", "findings", "steps", "run_id"}
    assert doc["schema"] == "latdoc.diagnosis/2"
    assert set(doc["verdict"]) == {
        "primary", "contributing", "confidence", "negligible", "rule_confidence",
        "confidence_model", "bank_accuracy", "runner_up", "near_threshold",
    }  # fmt: skip
    assert 0 <= doc["verdict"]["confidence"] <= 1
    assert doc["requests"] <= 30
    assert f"Plan: at most {min(30, planned_requests())} requests" in captured.err
    for finding in doc["findings"]:
        assert set(finding) >= {"kind", "evidence", "remedy", "predicted_gain_ms"}
    assert doc["steps"]["length"]["points"], "the length step measured no point"
    page = html.read_text()
    assert page.count("<svg") == 3
    for blob in (captured.out, captured.err, page, db.read_bytes().decode("latin-1")):
        assert SECRET not in blob

    run_id = doc["run_id"]
    assert main(["runs", "--db", str(db)]) == 0
    listing = capsys.readouterr().out
    assert run_id in listing and "done" in listing

    assert main(["report", run_id[:12], "--db", str(db), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["verdict"] == doc["verdict"]
    assert again["findings"] == doc["findings"]


def test_diagnose_speaks_the_completions_dialect(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab(LabConfig(latency=QUICK)) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--api", "completions", "--json",
             "--db", str(tmp_path / "c.db"), "--max-requests", "12", "--max-tokens", "4"]
        )  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["failed"] == 0
    assert doc["endpoint"] == server.base_url
    with sqlite3.connect(tmp_path / "c.db") as conn:
        urls = {json.loads(t)["url"] for (t,) in conn.execute("SELECT trace FROM sample_traces")}
    assert urls == {server.base_url + "/completions"}


def test_budgets_are_hard_caps(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab(LabConfig(latency=QUICK)) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(tmp_path / "b.db"),
             "--json", "--max-requests", "6", "--token-budget", "3000", "--max-tokens", "8"]
        )  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    with sqlite3.connect(tmp_path / "b.db") as conn:
        rows = conn.execute("SELECT trace FROM sample_traces").fetchall()
    assert len(rows) <= 6
    spent = 0
    for (record,) in rows:
        trace = json.loads(record)
        spent += (trace["prompt_tokens"] or 0) + (trace["output_tokens"] or 0)
    assert spent <= 3000
    assert any("budget" in note["text"] for note in doc["notes"])


def test_ctrl_c_keeps_every_finished_trace(tmp_path: Path) -> None:
    db = tmp_path / "int.db"
    slow = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=40.0)
    with LabProcess(LabConfig(latency=slow)) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "latdoc", "diagnose", server.base_url, "-m", "lab-sim",
             "--db", str(db), "--max-tokens", "16"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        stored = wait_for_samples(db, 4, 60)
        assert stored >= 4, "the run did not store traces in time"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Verdict" in out
    with sqlite3.connect(db) as conn:
        status = conn.execute("SELECT status FROM runs").fetchone()[0]
        kept = conn.execute("SELECT count(*) FROM samples").fetchone()[0]
    assert status == "interrupted"
    assert kept >= stored
    assert "Traceback" not in err


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(max_requests=st.integers(1, 14), token_budget=st.integers(150, 6000))
def test_steps_never_exceed_their_budget(
    lab: LabFactory, max_requests: int, token_budget: int
) -> None:
    from latdoc.probe import Endpoint
    from latdoc.workload import DiagnosisPlan, run_steps

    with lab(LabConfig(latency=QUICK)) as server:
        plan = DiagnosisPlan(
            Endpoint(server.base_url, "lab-sim"),
            max_tokens=8,
            max_requests=max_requests,
            token_budget=token_budget,
            max_seconds=20,
            seed=1,
        )
        result = asyncio.run(run_steps(plan))
    traces = [s.trace for s in result.samples]
    assert len(traces) <= max_requests
    spent = sum((t.prompt_tokens or 0) + (t.output_tokens or 0) for t in traces)
    assert spent <= token_budget


def test_the_time_budget_bounds_the_wall_time(lab: LabFactory) -> None:
    from latdoc.probe import Endpoint
    from latdoc.workload import DiagnosisPlan, run_steps

    slow = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=60.0)
    with lab(LabConfig(latency=slow)) as server:
        plan = DiagnosisPlan(
            Endpoint(server.base_url, "lab-sim"), max_tokens=32, max_seconds=2.0, seed=1
        )
        started = time.monotonic()
        result = asyncio.run(run_steps(plan))
        elapsed = time.monotonic() - started
    assert elapsed < 2.5
    assert result.samples, "nothing finished within the budget"
    assert any("time budget" in note.text for note in result.notes)


@pytest.mark.parametrize("refusal", ["connect", "http:401"])
def test_an_endpoint_that_cannot_answer_stops_the_run_at_its_first_request(
    lab: LabFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    refusal: str,
) -> None:
    """Nothing listening on the port, or a key the server refuses: every request would
    fail alike, so one is sent, it is kept, and the remedy is what to check, not retries."""
    db = tmp_path / "runs.db"
    args = ["-m", "lab-sim", "--db", str(db), "--json", "--max-requests", "30"]
    if refusal == "connect":
        code = main(["diagnose", f"http://127.0.0.1:{closed_port()}/v1", *args])
    else:
        with lab(LabConfig(latency=QUICK, api_key=SECRET)) as server:
            code = main(["diagnose", server.base_url, *args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert doc["requests"] == 1 and doc["verdict"]["primary"] == "errors"
    (finding,) = doc["findings"]
    counts = {k: v for k, v in finding["evidence"].items() if not k.endswith(("_ms", "_low"))}
    assert counts == {"failed": 1.0, "requests": 1.0, refusal: 1.0}
    assert [r["key"] for r in doc["remedies"]] == ["fix_endpoint"]
    hint = cannot_answer(refusal)
    assert hint is not None and hint in doc["remedies"][0]["change"]
    (stop,) = [n["text"] for n in doc["notes"] if n["text"].startswith("stopped at the first")]
    assert hint in stop and "none was sent" in stop
    with sqlite3.connect(db) as conn:
        (kept,) = conn.execute("SELECT COUNT(*) FROM samples").fetchone()
    assert kept == 1, "the calibration request that failed is kept"


def test_concurrency_is_what_the_load_step_sends_and_the_pool_is_sized_for(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from latdoc.records import Step
    from latdoc.store import Store

    db = tmp_path / "runs.db"
    with lab(LabConfig(latency=QUICK)) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--json",
             "--max-tokens", "8", "--seed", "3", "--concurrency", "3"]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "then 3 at once" in captured.err
    with Store(str(db)) as store:
        info = store.list_runs()[0]
        _, samples, _ = store.load_run(info.run_id)
    assert info.meta["concurrency"] == 3
    # The load step's sequential requests run alone; its burst sends exactly the concurrency.
    assert max(s.concurrency for s in samples if s.step is Step.LOAD) == 3
    assert sum(s.concurrency == 3 for s in samples if s.step is Step.LOAD) == 3


def test_priorities_rank_the_remedies_and_the_document_says_them(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "p.db"
    quadratic = LatencyModel(
        prefill_base_ms=5.0, prefill_ms_per_token=0.01, prefill_ms_per_token2=0.00005,
        decode_ms_per_token=1.0,
    )  # fmt: skip
    with lab(LabConfig(latency=quadratic)) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--json",
             "--priorities", "cost,latency,quality", "--context-window", "4096",
             "--max-tokens", "8", "--seed", "3"]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert doc["priorities"] == {
        "order": ["cost", "latency", "quality"], "weights": None, "not_read": [],
        "scenario": None, "text": "cost > latency > quality (--priorities)",
    }  # fmt: skip
    assert doc["scenario"] == "chat"
    assert doc["verdict"]["primary"] == "input_length", doc["findings"]
    remedies = doc["remedies"]
    classes = ["lower", "none", "higher"]
    costs = [classes.index(r["effects"]["cost"]) for r in remedies]
    assert costs == sorted(costs), "cost is read first: what bills less goes first"
    assert remedies[0]["key"] == "trim_window"
    assert remedies[-1]["key"] == "long_context_model"
    assert remedies[-1]["effects"]["cost"] == "higher"
    assert main(["report", doc["run_id"], "--db", str(db), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["priorities"] == doc["priorities"]
    assert [r["key"] for r in again["remedies"]] == [r["key"] for r in remedies]
