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
