"""What a run costs, end to end against the lab: the diagnosis prices every request at
the user's ``--price`` from the usage the lab reports, never spends past ``--max-cost``,
plans its spend with ``--dry-run`` without sending, and load and verify show their
levels' and arms' costs; a bad price or a cap without a price is one ``Error:`` line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import LabFactory
from latdoc import Store
from latdoc.cli import main
from latdoc.lab.sim import LabConfig, LatencyModel

QUICK = LatencyModel(prefill_base_ms=2.0, prefill_ms_per_token=0.002, decode_ms_per_token=0.5)
IN, OUT = 100.0, 400.0
"""Dollars per million prompt and output tokens: a 32K-token prompt costs $3.44, so a
budget of 50 cents leaves the long lengths out."""


def _dollars(prompt: int, output: int) -> float:
    return (prompt * IN + output * OUT) / 1e6


def test_a_priced_diagnosis_says_its_cost_and_never_spends_past_its_cap(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    with lab(LabConfig(latency=QUICK)) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--json",
             "--price", f"in={IN:g},out={OUT:g}", "--max-cost", "0.5", "--max-tokens", "8",
             "--seed", "5"]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    cost = doc["cost"]
    assert cost["price"]["source"] == "--price" and cost["currency"] == "USD"
    with Store(db) as store:
        _, samples, _ = store.load_run(doc["run_id"])
    spent = [_dollars(s.trace.prompt_tokens or 0, s.trace.output_tokens or 0) for s in samples]
    assert cost["without_usage"] == 0 and cost["requests"] == len(samples)
    assert cost["total"] == pytest.approx(sum(spent))
    assert 0 < cost["total"] <= 0.5
    notes = " ".join(n["text"] for n in doc["notes"])
    assert "money budget" in notes
    assert "$" in captured.err.splitlines()[0]  # the plan line says what it may spend

    rows = tmp_path / "rows.csv"
    assert main(["export", doc["run_id"], "--db", str(db), "--format", "csv", "-o", str(rows)]) == 0
    with rows.open() as f:
        costs = [float(r["cost_usd"]) for r in csv.DictReader(f)]
    assert costs == pytest.approx(spent)  # each request's own cost, in the order kept
    capsys.readouterr()

    assert main(["report", doc["run_id"], "--db", str(db)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert f"for {len(samples)} requests" in shown
    assert "at the price from --price" in shown


def test_a_dry_run_plans_the_spend_and_sends_nothing(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    with lab(LabConfig(latency=QUICK)) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--dry-run",
             "--price", f"in={IN:g},out={OUT:g}"]
        )  # fmt: skip
        assert server.app is not None
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "length 32,768" in captured.out and "at most" in captured.out
    assert "Dry run: nothing was sent." in captured.err
    with Store(db) as store:
        assert store.list_runs(10) == []


def test_without_a_price_the_cost_is_unknown_and_a_cap_is_refused(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    with lab(LabConfig(latency=QUICK)) as server:
        refused = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--max-cost", "1"]
        )
        err = capsys.readouterr().err
        assert refused == 2
        assert err.count("\n") == 1 and err.startswith("Error: --max-cost needs the model's price")
        assert (
            main(["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--price", "in=1"])
            == 2
        )
        assert capsys.readouterr().err == (
            "Error: --price needs out: write in=X,out=Y[,cached=Z] in dollars per million "
            "tokens, e.g. in=2.5,out=10\n"
        )
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--max-requests",
             "12", "--max-tokens", "8"]
        )  # fmt: skip
    shown = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert "Cost: unknown: latdoc has no price for model lab-sim" in shown
    assert "$0" not in shown


def test_load_and_verify_show_each_level_and_arm_at_its_price(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    price = ["--price", f"in={IN:g},out={OUT:g}"]
    with lab(LabConfig(latency=QUICK)) as server:
        page = tmp_path / "load.html"
        loaded = main(
            ["load", server.base_url, "-m", "lab-sim", "--db", str(db), "--concurrency", "1,2",
             "--duration-per-level", "0.5", "--max-tokens", "8", "--json", "--html", str(page),
             *price]
        )  # fmt: skip
        load_doc = json.loads(capsys.readouterr().out)
        verified = main(
            ["verify", server.base_url, "-m", "lab-sim", "--remedy", "keepalive", "--db",
             str(db), "--max-requests", "24", "--max-tokens", "8", "--max-cost", "1", *price]
        )  # fmt: skip
        verify_out = capsys.readouterr().out
    assert loaded == 0 and verified == 0
    for level in load_doc["levels"]:
        cost = level["cost"]
        assert cost["total"] > 0 and cost["price"]["source"] == "--price"
        ok = level["requests"] - level["failed"]
        assert level["cost_per_success"] == pytest.approx(cost["total"] / ok)
    shown = page.read_text()
    assert "What each level cost" in shown and "In US dollars, at the price from --price." in shown
    flat = " ".join(verify_out.split())
    assert "Cost by arm, in US dollars (at the price from --price)" in flat
    assert "B − A" in flat


def test_a_server_that_reports_no_usage_is_held_under_the_cap_by_the_worst_case(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lab refuses stream_options, so its streams report no usage: the budget keeps
    each request at its worst case, and what the lab itself counted stays under it."""
    log = tmp_path / "writes.jsonl"
    config = LabConfig(latency=QUICK, reject_stream_options=True, write_log=str(log))
    with lab(config) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(tmp_path / "runs.db"),
             "--json", "--price", f"in={IN:g},out={OUT:g}", "--max-cost", "0.3",
             "--max-tokens", "8", "--seed", "5"]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert doc["cost"]["total"] is None
    assert doc["cost"]["without_usage"] == doc["cost"]["requests"] > 0
    counted = [json.loads(line) for line in log.read_text().splitlines()]
    billed = sum(_dollars(c["prompt_tokens"], c["output_tokens"]) for c in counted)
    assert len(counted) >= 5
    assert billed <= 0.3
    # The worst case left the long prompts out: the cap bound the run.
    assert "money budget" in " ".join(n["text"] for n in doc["notes"])
