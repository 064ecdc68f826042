"""``latdoc verify --check FILE`` against the lab: a faster model that answers the user's
cases wrongly is a trade, one that answers them as well is better, and the checks the
budget cannot afford are said so and never sent.

The lab repeats the text of a ``Repeat exactly:`` prompt, and a model it marks wrong
answers it reversed (:class:`~latdoc.lab.sim.LabConfig`'s ``wrong_models``), so which
arm fails which case is known before the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from latdoc.cli import EXIT_OK, EXIT_USAGE, main
from latdoc.features.verify.send import MIN_TRIALS
from latdoc.lab.sim import REPEAT, LabConfig, LatencyModel, requests_received
from unit.features.verify.test_verify import serving

TODAY = LatencyModel(prefill_base_ms=40.0, prefill_ms_per_token=0.0, decode_ms_per_token=1.0)
SMALL = LatencyModel(prefill_base_ms=10.0, prefill_ms_per_token=0.0, decode_ms_per_token=1.0)
CASES = (
    {"id": "capital", "prompt": f"{REPEAT} Paris", "equals": "paris"},
    {"id": "number", "prompt": f"{REPEAT} 42 apples", "regex": r"^\d+ apples$"},
    {"id": "word", "prompt": f"{REPEAT} lighthouse", "contains": "light"},
    {"id": "colour", "prompt": f"{REPEAT} Blue", "equals": "blue"},
    {"id": "list", "prompt": f"{REPEAT} [1, 2, 3]", "json_schema": {"type": "array"}},
    {
        "id": "city",
        "prompt": f'{REPEAT} {{"city": "Lima"}}',
        "json_schema": {"type": "object", "required": ["city"]},
    },
    {
        "id": "greeting",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": f"{REPEAT} Hello, world"},
        ],
        "contains": "Hello",
    },
    {"id": "tide", "prompt": f"{REPEAT} The tide is out", "same_as_a": True},
)
"""Seven cases both arms can fail and one B alone is checked by: seven against none is
significant (McNemar's p = 2 × ½⁷ = 0.016), six would be too (0.031), five not (0.062)."""


def _lab(wrong: bool) -> LabConfig:
    return LabConfig(
        latency=TODAY,
        alt_models={"lab-small": SMALL},
        wrong_models=("lab-small",) if wrong else (),
        answer_tokens=8,
    )


def _check_file(tmp_path: Path) -> Path:
    path = tmp_path / "checks.jsonl"
    path.write_text("".join(json.dumps(case) + "\n" for case in CASES))
    return path


def _verify(base_url: str, tmp_path: Path, *more: str) -> int:
    return main(["verify", base_url, "-m", "lab-sim", "--remedy", "model", "--alt-model",
                 "lab-small", "--check", str(_check_file(tmp_path)), "--db",
                 str(tmp_path / "v.db"), "--seed", "3", "--max-requests", "80",
                 *more])  # fmt: skip


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_faster_model_that_fails_the_checks_is_a_trade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(_lab(wrong=True)) as lab:
        code = _verify(lab.base_url, tmp_path)
    out, err = capsys.readouterr()
    assert code == EXIT_OK
    assert "Then your 8 checks" in _flat(err)
    shown = _flat(out)
    assert "Your checks (" in shown and "8 of 8 cases sent in both arms)" in shown
    assert "A 7/7 100% 65%–100%" in shown
    assert "B 0/8 0% 0%–32%" in shown
    assert "7 passed in A and failed in B, 0 the other way (p = 0.016" in shown
    assert "1 same_as_a case: B's answer against A's" in shown
    assert "Failing in B: capital, number, word, colour, list and 3 more" in shown
    assert "Verdict: trade — faster, but fails more of your checks: A passed 7/7, B 0/8" in shown
    assert "Verdict: better" not in shown


def test_latency_cost_and_checks_side_by_side_name_the_trade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The smaller model at a quarter of the price: faster and cheaper, but wrong."""
    with serving(_lab(wrong=True)) as lab:
        code = _verify(
            lab.base_url, tmp_path, "--price", "in=2,out=8", "--alt-price", "in=0.5,out=2",
            "--max-cost", "0.5",
        )  # fmt: skip
    out, _ = capsys.readouterr()
    assert code == EXIT_OK
    shown = _flat(out)
    assert "Cost by arm, in US dollars (A at the price from --price; B at the price " in shown
    difference = next(line.split() for line in out.splitlines() if line.strip().startswith("B − A"))
    # The same requests at a quarter of the price: 75% less per 1,000 and per success.
    assert difference[3].startswith("-$") and difference[4:] == ["(-75%)", difference[5], "(-75%)"]
    assert "A 7/7 100%" in shown and "B 0/8 0%" in shown
    assert "Verdict: trade — faster, but fails more of your checks" in shown
    spent = float(shown.split("The whole run spent $")[1].split(" ")[0])
    assert 0 < spent <= 0.5


def test_a_faster_model_that_passes_them_as_well_is_better(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(_lab(wrong=False)) as lab:
        code = _verify(lab.base_url, tmp_path, "--json")
    assert code == EXIT_OK
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "latdoc.verify/2" and document["verdict"] == "better"
    checks = document["checks"]
    assert (checks["cases"], checks["checked"], checks["left_out"]) == (8, 8, 0)
    assert checks["arms"]["A"] == {
        "passed": 7,
        "total": 7,
        "rate": 1.0,
        "interval": pytest.approx([0.646, 1.0], abs=0.001),
        "failing": [],
    }
    assert (checks["arms"]["B"]["passed"], checks["arms"]["B"]["total"]) == (8, 8)
    assert (checks["quality"], checks["p_value"]) == ("no_difference", None)
    assert "no difference in your checks: A passed 7/7, B 8/8" in document["summary"]


def test_the_checks_the_budget_cannot_afford_are_said_and_not_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Room for the calibration's two requests, the trials' minimum (a warm-up and ten
    trials an arm) and three cases in both arms: the first three are checked, the rest
    named in a note, and the lab never sees more requests than the budget (and the one
    that asked whether B answers)."""
    budget = 2 + 2 * (1 + MIN_TRIALS) + 2 * 3
    with serving(_lab(wrong=True)) as lab:
        code = main(["verify", lab.base_url, "-m", "lab-sim", "--remedy", "model",
                     "--alt-model", "lab-small", "--check", str(_check_file(tmp_path)),
                     "--db", str(tmp_path / "v.db"), "--seed", "3",
                     "--max-requests", str(budget), "--json"])  # fmt: skip
        received = requests_received(lab.app)
    assert code == EXIT_OK
    document = json.loads(capsys.readouterr().out)
    assert received <= budget + 1
    checks = document["checks"]
    assert (checks["cases"], checks["checked"]) == (8, 3)
    assert checks["arms"]["B"]["failing"][0] == {"id": "capital", "why": "is not 'paris'"}
    notes = [n["text"] for n in document["notes"]]
    assert any("affords 3 of the 8 checks in both arms" in n for n in notes), notes


def test_a_bad_check_file_is_one_error_line_before_anything_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(CASES[0]) + "\n" + '{"prompt": "x", "regex": "("}\n')
    with serving(_lab(wrong=False)) as lab:
        code = main(["verify", lab.base_url, "-m", "lab-sim", "--remedy", "model",
                     "--alt-model", "lab-small", "--check", str(path),
                     "--db", str(tmp_path / "v.db")])  # fmt: skip
        received = requests_received(lab.app)
    assert (code, received) == (EXIT_USAGE, 0)
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"Error: {path}:2: regex '(' does not compile: missing )")
