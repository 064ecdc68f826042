"""An interrupted ``latdoc load`` keeps the levels it finished and the one it cut short,
marked partial, and ``latdoc report RUN`` shows them."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FAST, LabFactory, stored_samples, wait_for_samples
from latdoc.cli import EXIT_OK, main
from latdoc.lab.sim import LabConfig
from paths import ROOT

SRC = str(ROOT / "src")


def test_ctrl_c_in_the_second_level_keeps_the_first_and_marks_the_second_partial(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "load.db"
    with lab(LabConfig(latency=FAST, slots=4)) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "latdoc", "load", server.base_url, "-m", "lab-sim",
             "--concurrency", "1,2,4", "--duration-per-level", "1", "--max-tokens", "4",
             "--max-seconds", "60", "--db", str(db)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": SRC, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        try:
            assert wait_for_samples(db, 5, 30, concurrency=2) >= 5, (
                "the second level did not start in time"
            )
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err
    assert "2 (partial)" in out
    with sqlite3.connect(db) as conn:
        (run_id,) = conn.execute("SELECT run_id FROM runs").fetchone()
    first, second = stored_samples(db, 1), stored_samples(db, 2)

    capsys.readouterr()
    assert main(["report", run_id, "--json", "--db", str(db)]) == EXIT_OK
    document = json.loads(capsys.readouterr().out)
    levels = document["levels"]
    assert [lv["label"] for lv in levels] == ["1", "2"]
    assert [lv["window"]["partial"] for lv in levels] == [False, True]
    assert [lv["requests"] for lv in levels] == [first, second]
    assert levels[0]["window"]["end_ns"] - levels[0]["window"]["start_ns"] >= 1e9
    assert levels[1]["window"]["end_ns"] - levels[1]["window"]["start_ns"] < 1e9
    assert levels[0]["ttft_ms"] is not None and levels[1]["ttft_ms"] is not None
    notes = document["notes"]
    assert any(n.startswith("level 2 was cut short after") for n in notes), notes
    assert "interrupted by the user; reported what was measured" in notes

    assert main(["report", run_id, "--db", str(db)]) == EXIT_OK
    text = capsys.readouterr().out
    assert "Latency by level" in text and "2 (partial)" in text
    assert "level 2 was cut short" in text
