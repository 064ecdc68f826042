"""The export verbs without a command line: a run out as rows and back into another
store, and the format refused before anything is written where it cannot go."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from latdoc.errors import UsageError
from latdoc.features.export import import_export, open_export
from latdoc.records import RequestTrace, Sample, Step
from latdoc.store import Store

URL = "https://api.example.com/v1/chat/completions"


def _store(db: Path) -> str:
    with Store(db) as store:
        run_id = store.new_run(endpoint=URL, model="m", scenario="chat", meta={}, kind="probe")
        for i in range(3):
            trace = RequestTrace(
                started_at=datetime(2026, 11, 29, 12, 0, i, tzinfo=UTC),
                t0_ns=0,
                url=URL,
                model="m",
                dialect="chat",
                first_token_ns=(100 + i) * 1_000_000,
                done_ns=(300 + i) * 1_000_000,
                output_tokens=8,
                status=200,
            )
            store.add_sample(run_id, Sample(Step.PROBE, trace, 64, index=i))
        store.finish_run(run_id, status="done", diagnosis=None)
    return run_id


def test_a_run_goes_out_as_json_lines_and_into_another_store(tmp_path: Path) -> None:
    run_id = _store(tmp_path / "a.db")
    out = tmp_path / "run.jsonl"
    with Store(tmp_path / "a.db") as store:
        export = open_export(store, run_id[:12], format="jsonl")
        assert export.info.run_id == run_id and not export.writes_a_file
        with out.open("w", encoding="utf-8") as stream:
            assert export.write(stream) == 3
    found = import_export(out, db=tmp_path / "b.db")
    assert (found.run_id, found.requests, found.store_path) == (run_id, 3, str(tmp_path / "b.db"))
    with Store(tmp_path / "a.db") as a, Store(tmp_path / "b.db") as b:
        assert b.load_run(run_id)[1] == a.load_run(run_id)[1]


def test_parquet_is_refused_for_a_stream_and_an_unknown_run_first(tmp_path: Path) -> None:
    run_id = _store(tmp_path / "a.db")
    with Store(tmp_path / "a.db") as store:
        assert open_export(store, run_id, format="parquet").writes_a_file
        with pytest.raises(UsageError, match="--format parquet writes a file"):
            open_export(store, run_id, format="parquet", to_file=False)
        with pytest.raises(UsageError, match="use one of jsonl, csv, parquet"):
            open_export(store, run_id, format="xml")
        with pytest.raises(UsageError):
            open_export(store, "nope", format="parquet", to_file=False)
        csv = io.StringIO()
        assert open_export(store, run_id, format="csv").write(csv) == 3


def test_an_export_that_cannot_be_read_adds_no_store(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read"):
        import_export(tmp_path / "missing.jsonl", db=tmp_path / "b.db")
    assert not (tmp_path / "b.db").exists()
