"""``latdoc run PLAN.toml``: the steps a plan lists run in order with the command line's
own options and validation; a mistake anywhere is one error naming its step, and
nothing is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from latdoc.cli import main


def _plan(tmp_path: Path, url: str, steps: str) -> Path:
    path = tmp_path / "latency.toml"
    path.write_text(f'[endpoint]\nurl = "{url}"\nmodel = "lab-sim"\n\n{steps}', encoding="utf-8")
    return path


STEPS = """
[[steps]]
command = "probe"
repeat = 3
max-tokens = 4

[[steps]]
command = "load"
concurrency = [1, 2]
duration-per-level = "1s"
max-tokens = 4
json = true

[[steps]]
command = "verify"
remedy = "keepalive"
max-requests = 12
json = false
"""


def test_dry_run_prints_the_command_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _plan(tmp_path, "http://127.0.0.1:9/v1", STEPS)
    assert main(["run", str(plan), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == (
        "latdoc load http://127.0.0.1:9/v1 --model lab-sim --concurrency 1,2 "
        "--duration-per-level 1s --max-tokens 4 --json"
    )
    assert len(lines) == 3


def test_a_diagnose_step_takes_priorities_and_a_bad_one_names_its_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    step = '[[steps]]\ncommand = "diagnose"\npriorities = "{}"\n'
    plan = _plan(tmp_path, "http://127.0.0.1:9/v1", step.format("cost,latency,quality"))
    assert main(["run", str(plan), "--dry-run"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.endswith("--priorities cost,latency,quality")
    plan = _plan(tmp_path, "http://127.0.0.1:9/v1", step.format("cost,speed,quality"))
    assert main(["run", str(plan), "--dry-run"]) == 2
    (error,) = capsys.readouterr().err.splitlines()
    assert error.endswith("step 1 (diagnose): --priorities: unknown corner 'speed': name the "
                          "three corners in order (latency,cost,quality) or weigh them "
                          "(latency=3,cost=1,quality=2)")  # fmt: skip
