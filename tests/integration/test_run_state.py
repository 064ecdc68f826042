"""No run is left ``running``: a run whose process was killed is found ``interrupted`` with
what it kept, SIGTERM stops a long command as Ctrl-C does, an instrumented recording ends
``recorded`` when its store closes, and ``latdoc runs --prune`` removes what was chosen."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from conftest import FAST, LabFactory, wait_for_samples
from latdoc import Store, instrument
from latdoc.cli import EXIT_OK, main
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from paths import ROOT
from unit.pipeline.test_run_state import _status

SRC = str(ROOT / "src")


SLOW = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=40.0)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC, "PYTHONUNBUFFERED": "1"}


def test_an_instrumented_recording_is_recorded_when_its_store_closes(
    lab: LabFactory, tmp_path: Path
) -> None:
    import asyncio

    db = tmp_path / "s.db"

    async def go(base_url: str) -> str:
        client = httpx.AsyncClient(base_url=base_url)
        store = Store(db)
        run_id = instrument(client, store=store).run_id
        body = {"model": "lab-sim", "stream": True, "max_tokens": 4,
                "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
        async with client.stream("POST", "/chat/completions", json=body) as response:
            await response.aread()
        assert _status(db, run_id) == "running"
        store.close()
        await client.aclose()
        return run_id

    with lab(LabConfig(latency=FAST)) as server:
        run_id = asyncio.run(go(server.base_url))
    with Store(db) as store:
        info = store.run_info(run_id)
    assert (info.status, info.requests) == ("recorded", 1)


_LEFT_OPEN = """
import sys, httpx
from latdoc import Store, instrument
store = Store(sys.argv[1])
print(instrument(httpx.AsyncClient(), store=store).run_id, flush=True)
"""


def test_an_instrumented_recording_left_open_is_recorded_at_exit(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    done = subprocess.run(
        [sys.executable, "-c", _LEFT_OPEN, str(db)],
        capture_output=True, text=True, env=_env(), check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _status(db, done.stdout.strip()) == "recorded"


def _diagnose(server_url: str, db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "latdoc", "diagnose", server_url, "-m", "lab-sim",
         "--db", str(db), "--max-tokens", "16"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip


def test_a_killed_diagnosis_is_listed_interrupted_with_what_it_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "kill.db"
    with LabProcess(LabConfig(latency=SLOW)) as server:
        proc = _diagnose(server.base_url, db)
        try:
            assert wait_for_samples(db, 4, 60) >= 4, "the run did not store traces in time"
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == -signal.SIGKILL
    with sqlite3.connect(db) as conn:
        (run_id, status), kept = (
            conn.execute("SELECT run_id, status FROM runs").fetchone(),
            conn.execute("SELECT count(*) FROM samples").fetchone()[0],
        )
    assert status == "running" and kept >= 4
    capsys.readouterr()
    assert main(["runs", "--db", str(db)]) == EXIT_OK
    row = next(line for line in capsys.readouterr().out.splitlines() if run_id in line)
    assert row.split()[3:5] == ["interrupted", str(kept)]
    with Store(db) as store:
        info = store.run_info(run_id)
    assert info.notes[-1].text.endswith(f"{kept} traces kept")


def test_sigterm_stops_a_diagnosis_as_ctrl_c_does(tmp_path: Path) -> None:
    db = tmp_path / "term.db"
    with LabProcess(LabConfig(latency=SLOW)) as server:
        proc = _diagnose(server.base_url, db)
        try:
            stored = wait_for_samples(db, 4, 60)
            assert stored >= 4, "the run did not store traces in time"
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err
    assert "Verdict" in out and "Traceback" not in err
    with Store(db) as store:
        (info,) = store.list_runs()
        _, _, diagnosis = store.load_run(info.run_id)
    assert info.status == "interrupted" and info.requests >= stored
    assert diagnosis is not None
    assert "interrupted by the user; diagnosed what was measured" in [n.text for n in info.notes]


def test_sigterm_stops_a_load_sweep_as_ctrl_c_does(lab: LabFactory, tmp_path: Path) -> None:
    db = tmp_path / "load.db"
    with lab(LabConfig(latency=FAST, slots=4)) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "latdoc", "load", server.base_url, "-m", "lab-sim",
             "--concurrency", "1,2,4", "--duration-per-level", "1", "--max-tokens", "4",
             "--max-seconds", "60", "--db", str(db)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
        )  # fmt: skip
        try:
            assert wait_for_samples(db, 5, 30, concurrency=2) >= 5
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err
    assert "2 (partial)" in out
    with Store(db) as store:
        (info,) = store.list_runs()
    assert info.status == "interrupted"
    assert "interrupted by the user; reported what was measured" in [n.text for n in info.notes]


def test_sigterm_stops_a_watch_as_ctrl_c_does(lab: LabFactory, tmp_path: Path) -> None:
    db = tmp_path / "watch.db"
    with lab(LabConfig(latency=FAST)) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "latdoc", "watch", server.base_url, "--model", "lab-sim",
             "--every", "0.5s", "--duration", "60s", "--long-tokens", "128", "--max-tokens", "4",
             "--name", "w", "--db", str(db)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
        )  # fmt: skip
        try:
            assert wait_for_samples(db, 3, 30) >= 3, "the watch did not store traces in time"
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err
    assert "Interrupted: every finished trace is kept." in err
    assert "Watch w by hour of day" in out
    with Store(db) as store:
        (info,) = store.find_runs("watch", "w")
    assert info.status == "interrupted" and info.requests >= 3


def test_a_killed_load_sweep_is_listed_interrupted_with_what_it_kept(
    lab: LabFactory, tmp_path: Path
) -> None:
    db = tmp_path / "kill-load.db"
    with lab(LabConfig(latency=FAST, slots=4)) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "latdoc", "load", server.base_url, "-m", "lab-sim",
             "--concurrency", "1,2,4", "--duration-per-level", "1", "--max-tokens", "4",
             "--max-seconds", "60", "--db", str(db)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
        )  # fmt: skip
        try:
            assert wait_for_samples(db, 5, 30, concurrency=2) >= 5
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    with sqlite3.connect(db) as conn:
        kept = conn.execute("SELECT count(*) FROM samples").fetchone()[0]
    with Store(db) as store:
        (info,) = store.list_runs()
    assert (info.kind, info.status, info.requests) == ("load", "interrupted", kept)
    assert info.notes[-1].text.endswith(f"{kept} traces kept")


def test_sigterm_stops_a_verify_as_ctrl_c_does(tmp_path: Path) -> None:
    db = tmp_path / "verify.db"
    with LabProcess(LabConfig(latency=SLOW)) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "latdoc", "verify", server.base_url, "-m", "lab-sim",
             "--remedy", "trim", "--from", "1500", "--to", "300", "--max-requests", "40",
             "--seed", "1", "--db", str(db)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
        )  # fmt: skip
        try:
            stored = wait_for_samples(db, 4, 60)
            assert stored >= 4, "the experiment did not store traces in time"
            proc.send_signal(signal.SIGTERM)
            _out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    with Store(db) as store:
        runs = store.list_runs()
    assert runs and {r.status for r in runs} == {"interrupted"}
    assert sum(r.requests for r in runs) >= stored
    assert all(
        "interrupted by the user; compared what was measured" in [n.text for n in r.notes]
        for r in runs
    )
