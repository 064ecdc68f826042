"""``latdoc compare``: like with like, intervals that cover the truth, significance when real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import LabFactory
from latdoc.cli import EXIT_OK, EXIT_USAGE, main


def _probe(url: str, db: Path, *extra: str) -> str:
    code = main(["probe", url, "-m", "lab-sim", "-n", "6", "--max-tokens", "4", "--db", str(db),
                 *extra])  # fmt: skip
    assert code == EXIT_OK
    from latdoc.store import Store

    with Store(db) as store:
        return store.list_runs(1)[0].run_id


def test_two_probe_runs_of_one_endpoint_compare(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "c.db"
    with lab() as server:
        first = _probe(server.base_url, db)
        second = _probe(server.base_url, db)
    capsys.readouterr()
    assert main(["compare", first, second, "--db", str(db), "--json"]) == EXIT_OK
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "latdoc.comparison/1"
    assert document["a"]["run_id"] == first and document["a"]["kind"] == "probe"
    assert [g["label"] for g in document["groups"]] == ["probe, reused connection"]
    for group in document["groups"]:
        for metric in group["metrics"]:
            assert metric["statistic"] == "median" and metric["a_ms"] >= 0 and metric["summary"]


def test_compare_refuses_what_it_cannot_compare(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "c.db"
    with lab() as one:
        first = _probe(one.base_url, db)
    with lab() as other:
        second = _probe(other.base_url, db)
    capsys.readouterr()
    assert main(["compare", first, second, "--db", str(db)]) == EXIT_USAGE
    assert "--allow-different" in capsys.readouterr().err
    assert main(["compare", first, second, "--db", str(db), "--allow-different"]) == EXIT_OK
    assert main(["compare", first, "20991231-000000-ffffff", "--db", str(db)]) == EXIT_USAGE
    assert "20991231-000000-ffffff" in capsys.readouterr().err
    assert main(["report", first, "--db", str(db)]) == EXIT_USAGE
    assert "probe run" in capsys.readouterr().err
