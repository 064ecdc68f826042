"""``latdoc run PLAN.toml``: the steps a plan lists run in order with the command line's
own options and validation; a mistake anywhere is one error naming its step, and
nothing is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FAST, LabFactory
from latdoc.cli import main
from latdoc.lab.sim import LabConfig, requests_received
from latdoc.store import Store
from unit.cli.test_plan import STEPS, _plan


def test_a_plan_runs_its_steps_in_order_into_one_store(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    with lab(LabConfig(latency=FAST)) as server:
        plan = _plan(tmp_path, server.base_url, STEPS)
        assert main(["run", str(plan), "--db", str(db)]) == 0
    captured = capsys.readouterr()
    assert "Step 1 of 3: latdoc probe" in captured.err
    assert "Step 3 of 3: latdoc verify" in captured.err
    assert '"run_id"' in captured.out, "the load step printed its JSON document"
    with Store(db) as store:
        kinds = sorted(r.kind for r in store.list_runs())
    assert kinds == ["load", "probe", "verify", "verify"]


@pytest.mark.parametrize(
    ("steps", "said"),
    [
        (
            '[[steps]]\ncommand = "probe"\n\n[[steps]]\ncommand = "load"\nconcurency = 4\n',
            "step 2 (load): no option is named concurency (did you mean concurrency?)",
        ),
        ('[[steps]]\ncommand = "load"\nconcurrency = "0"\n', "step 1 (load):"),
        ('[[steps]]\ncommand = "bake"\n', "step 1: command 'bake'"),
        (
            '[[steps]]\ncommand = "probe"\nrepeat = [true]\n',
            "repeat = [true]: give a string, a number",
        ),
        ('[[steps]]\ncommand = "probe"\nmodel = "x"\n', "model is in [endpoint] already"),
        ("[[steps]]\ncommand = \n", "latency.toml: Invalid value (at line 6"),
        ("", "no steps"),
    ],
)
def test_a_mistake_anywhere_is_one_error_and_nothing_is_sent(
    lab: LabFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    steps: str,
    said: str,
) -> None:
    with lab(LabConfig(latency=FAST)) as server:
        plan = _plan(tmp_path, server.base_url, steps)
        assert main(["run", str(plan), "--db", str(tmp_path / "r.db")]) == 2
        assert server.app is not None
        assert requests_received(server.app) == 0
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and said in err, err
    assert "Traceback" not in err


def test_a_failing_step_sets_the_exit_status_and_the_rest_still_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens on the endpoint's port: each probe fails (exit 1)."""
    steps = '[[steps]]\ncommand = "probe"\nrepeat = 2\nmax-tokens = 2\n' * 1
    steps += '\n[[steps]]\ncommand = "probe"\nrepeat = 2\nmax-tokens = 2\n'

    plan = tmp_path / "p.toml"
    plan.write_text(
        '[endpoint]\nurl = "http://127.0.0.1:9/v1"\nmodel = "m"\n\n' + steps, encoding="utf-8"
    )
    assert main(["run", str(plan), "--db", str(tmp_path / "r.db")]) == 1
    err = capsys.readouterr().err
    assert "Step 2 of 2" in err
    assert main(["run", str(plan), "--db", str(tmp_path / "r.db"), "--stop-on-failure"]) == 1
    assert "Step 2 of 2" not in capsys.readouterr().err
