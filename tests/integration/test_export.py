"""``latdoc export`` writes every request of a run as one row (JSON Lines, CSV, Parquet)
with the schema's name and version; ``latdoc import`` reads the JSON Lines back into
another store with nothing lost; broken files and unwritable paths are one clear
error."""

from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import FAST
from latdoc.cli import main
from latdoc.lab.sim import LabConfig
from latdoc.store import Store
from latdoc.store.requests import COLUMNS, SCHEMA, VERSION


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one real diagnosis of the lab (every step, a verdict)."""
    from latdoc.lab.sim import LabServer

    db = tmp_path_factory.mktemp("export") / "runs.db"
    with LabServer(LabConfig(latency=FAST, seed=4)) as server:
        code = main(["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--json"])
    assert code == 0
    with Store(db) as store:
        (run,) = store.list_runs()
    return db, run.run_id


def test_jsonl_goes_to_another_store_and_back_with_nothing_lost(
    diagnosed: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, run_id = diagnosed
    capsys.readouterr()
    out = tmp_path / "run.jsonl"
    assert main(["export", run_id, "--db", str(db), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    head = json.loads(lines[0])
    assert (head["schema"], head["version"], head["kind"]) == (SCHEMA, VERSION, "run")
    assert all(json.loads(line)["schema"] == SCHEMA for line in lines[1:])

    other = tmp_path / "other.db"
    assert main(["import", str(out), "--db", str(other)]) == 0
    assert f"Imported run {run_id}" in capsys.readouterr().err
    with Store(db) as a, Store(other) as b:
        info_a, samples_a, diagnosis_a = a.load_run(run_id)
        info_b, samples_b, diagnosis_b = b.load_run(run_id)
    assert len(samples_a) == len(lines) - 1 > 10
    assert samples_b == samples_a
    assert diagnosis_b == diagnosis_a is not None
    assert info_b == info_a


def test_csv_has_every_column_and_a_row_per_request(
    diagnosed: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, run_id = diagnosed
    capsys.readouterr()
    assert main(["export", run_id, "--db", str(db), "--format", "csv"]) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    with Store(db) as store:
        _, samples, _ = store.load_run(run_id)
    assert list(rows[0]) == [c.name for c in COLUMNS]
    assert len(rows) == len(samples)
    for row, sample in zip(rows, samples, strict=True):
        assert (row["schema"], row["version"], row["run_id"]) == (SCHEMA, str(VERSION), run_id)
        assert row["step"] == str(sample.step)
        assert int(row["concurrency"]) == sample.concurrency
        if sample.trace.ttft_ms is not None:
            assert math.isclose(float(row["ttft_ms"]), sample.trace.ttft_ms)
        assert row["started_at"] == sample.trace.started_at.isoformat()


def test_parquet_is_typed_and_names_its_schema(diagnosed: tuple[Path, str], tmp_path: Path) -> None:
    db, run_id = diagnosed
    out = tmp_path / "run.parquet"
    assert main(["export", run_id, "--db", str(db), "--format", "parquet", "-o", str(out)]) == 0
    table = pq.read_table(out)
    with Store(db) as store:
        _, samples, _ = store.load_run(run_id)
    assert table.num_rows == len(samples)
    assert table.schema.metadata[b"schema"] == SCHEMA.encode()
    assert table.column_names == [c.name for c in COLUMNS]
    assert str(table.schema.field("ttft_ms").type) == "double"
    assert str(table.schema.field("ok").type) == "bool"
    ttfts = table.column("ttft_ms").to_pylist()
    assert ttfts == [s.trace.ttft_ms for s in samples]


def test_a_gzipped_export_imports(diagnosed: tuple[Path, str], tmp_path: Path) -> None:
    db, run_id = diagnosed
    plain = tmp_path / "run.jsonl"
    assert main(["export", run_id, "--db", str(db), "-o", str(plain)]) == 0
    packed = tmp_path / "run.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    other = tmp_path / "other.db"
    assert main(["import", str(packed), "--db", str(other)]) == 0
    with Store(other) as store:
        assert store.run_info(run_id).requests == len(plain.read_text().splitlines()) - 1


def test_a_broken_line_names_itself_and_adds_nothing(
    diagnosed: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, run_id = diagnosed
    plain = tmp_path / "run.jsonl"
    assert main(["export", run_id, "--db", str(db), "-o", str(plain)]) == 0
    lines = plain.read_text().splitlines()
    broken = json.loads(lines[5])
    broken["record"]["trace"]["t0_ns"] = "soon"
    lines[5] = json.dumps(broken)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    other = tmp_path / "other.db"
    capsys.readouterr()
    assert main(["import", str(bad), "--db", str(other)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"Error: {bad}:6: record:")
    assert "Traceback" not in err
    with Store(other) as store:
        assert store.list_runs() == []

    for text, said in (
        ("", "empty"),
        ('{"schema": "other"}\n', "expected 'latdoc-requests'"),
        (json.dumps({"schema": SCHEMA, "version": 99}) + "\n", "version 99"),
        ("\xff\xfe not text", "cannot be read"),
    ):
        odd = tmp_path / "odd.jsonl"
        odd.write_bytes(text.encode("latin-1"))
        assert main(["import", str(odd), "--db", str(other)]) == 2
        assert said in capsys.readouterr().err


def test_an_unwritable_output_is_one_clear_error(
    diagnosed: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, run_id = diagnosed
    nowhere = tmp_path / "missing-dir" / "run.csv"
    capsys.readouterr()
    for fmt in ("csv", "parquet"):
        assert main(["export", run_id, "--db", str(db), "--format", fmt, "-o", str(nowhere)]) == 2
        assert capsys.readouterr().err.startswith(f"Error: cannot write {nowhere}")
    assert main(["export", run_id, "--db", str(db), "--format", "parquet"]) == 2
    assert "give --output FILE" in capsys.readouterr().err
    assert main(["export", "nosuchrun", "--db", str(db)]) == 2
