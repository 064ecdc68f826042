"""No run is left ``running``: a run whose process was killed is found ``interrupted`` with
what it kept, SIGTERM stops a long command as Ctrl-C does, an instrumented recording ends
``recorded`` when its store closes, and ``latdoc runs --prune`` removes what was chosen."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from latdoc import Store
from latdoc.cli import EXIT_OK, main
from latdoc.records import RequestTrace, Sample, Step
from latdoc.store import process, schema, trace_to_record

T0 = datetime(2026, 11, 29, 20, 15, 2, tzinfo=UTC)


def _sample(i: int) -> Sample:
    trace = RequestTrace(
        started_at=T0 + timedelta(seconds=i), t0_ns=10**12, url="http://lab/v1/chat/completions",
        model="m", dialect="openai-chat",
        sent_ns=1_000_000, first_byte_ns=40_000_000, first_token_ns=50_000_000,
        done_ns=100_000_000, status=200, output_tokens=2,
    )  # fmt: skip
    return Sample(Step.LOAD, trace, concurrency=1, index=i)


def _new_run(store: Store) -> str:
    return store.new_run(endpoint="http://lab", model="m", scenario="chat", meta={})


def _set_owner(db: Path, run_id: str, **columns: object) -> None:
    with sqlite3.connect(db) as conn:
        for column, value in columns.items():
            conn.execute(f"UPDATE runs SET {column} = ? WHERE run_id = ?", (value, run_id))


def _status(db: Path, run_id: str) -> str:
    with Store(db) as store:
        return store.run_info(run_id).status


def test_a_run_records_the_process_that_keeps_it(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        info = store.run_info(_new_run(store))
    here = process.current()
    assert info.owner == here
    assert here.pid == os.getpid() and here.host == socket.gethostname()
    if Path("/proc/sys/kernel/random/boot_id").exists():
        assert here.boot_id and here.started is not None


def test_a_run_of_another_boot_is_interrupted_and_one_of_another_host_is_left(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        rebooted, elsewhere, live = _new_run(store), _new_run(store), _new_run(store)
        store.add_samples(rebooted, [_sample(i) for i in range(3)])
    _set_owner(db, rebooted, boot_id="another-boot")
    _set_owner(db, elsewhere, host="another-host", pid=1, boot_id="another-boot")
    with Store(db) as store:
        found = {r.run_id: r for r in store.list_runs()}
    if process.current().boot_id is not None:
        assert found[rebooted].status == "interrupted"
        assert found[rebooted].requests == 3
        note = found[rebooted].notes[-1].text
        assert note.endswith("ended without closing the run; 3 traces kept")
    assert found[elsewhere].status == "running"
    # This process is alive: its own run stays running while another store opens.
    assert found[live].status == "running"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_process_id_taken_again_by_another_process_is_not_the_run_s(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        reused, same = _new_run(store), _new_run(store)
    # pid 1 is alive, but it did not start when this run's owner did.
    started = process.process_started(1)
    assert started is not None
    _set_owner(db, reused, pid=1, pid_started=started + 1)
    _set_owner(db, same, pid=1, pid_started=started)
    assert _status(db, reused) == "interrupted"
    assert _status(db, same) == "running"


def test_a_version_5_store_keeps_its_runs_and_samples_and_takes_the_new_status(
    tmp_path: Path,
) -> None:
    db = tmp_path / "v5.db"
    # A store written by version 5: its runs have no owner, and "recorded" is refused.
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    schema.migrate(conn, str(db), schema.MIGRATIONS[:5])
    conn.execute(
        "INSERT INTO runs (run_id, started_at, status, endpoint, model, scenario, meta, kind) "
        "VALUES ('r5', '2026-11-29T20:15:02.000000+00:00', 'running', 'http://lab', 'm', '', "
        "'{}', 'load')"
    )
    for seq in (1, 2):
        conn.execute(
            "INSERT INTO samples (seq, run_id, idx, step, concurrency, cold, ok) "
            "VALUES (?, 'r5', ?, 'load', 2, 0, 1)",
            (seq, seq - 1),
        )
        conn.execute(
            "INSERT INTO sample_traces (seq, trace) VALUES (?, ?)",
            (seq, json.dumps(trace_to_record(_sample(seq).trace))),
        )
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE runs SET status = 'recorded'")
    conn.close()
    # Opened with foreign keys on, the copy of the runs table keeps every sample.
    with Store(db) as store:
        info, samples, _ = store.load_run("r5")
        assert (info.status, info.requests, info.owner) == ("running", 2, None)
        assert [s.trace for s in samples] == [_sample(1).trace, _sample(2).trace]
        store.add_samples("r5", [_sample(3)])
        store.finish_run("r5", status="recorded", diagnosis=None)
        assert store.run_info("r5").status == "recorded"
        store.delete_runs(["r5"])
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
        # The samples went with their run: the reference survived the copy.
        assert conn.execute("SELECT count(*) FROM samples").fetchone()[0] == 0


def test_prune_lists_first_and_removes_only_what_was_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "p.db"
    now = datetime.now(UTC)
    ages = {"old-failed": 10, "old-interrupted": 10, "new-interrupted": 0, "old-done": 10}
    ids: dict[str, str] = {}
    for name, days in ages.items():
        with Store(db, clock=lambda d=days: now - timedelta(days=d, minutes=1)) as store:
            ids[name] = _new_run(store)
            store.add_samples(ids[name], [_sample(0), _sample(1)])
            store.finish_run(ids[name], status=name.split("-")[1], diagnosis=None)
    with Store(db) as store:
        live = _new_run(store)
        # Chosen by default: every status but running.
        assert {r.run_id for r in store.choose_runs()} == set(ids.values())

    def listed() -> set[str]:
        with Store(db) as store:
            return {r.run_id for r in store.list_runs()}

    capsys.readouterr()
    args = ["runs", "--prune", "--status", "interrupted,failed", "--older-than", "7d"]
    assert main([*args, "--db", str(db)]) == EXIT_OK
    out = capsys.readouterr().out
    assert ids["old-failed"] in out and ids["old-interrupted"] in out
    assert ids["new-interrupted"] not in out and ids["old-done"] not in out
    assert "Would remove 2 runs (4 traces); add --yes" in out
    assert listed() == {*ids.values(), live}

    assert main([*args, "--yes", "--db", str(db)]) == EXIT_OK
    assert "Removed 2 runs (4 traces)." in capsys.readouterr().out
    assert listed() == {ids["new-interrupted"], ids["old-done"], live}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM samples").fetchone()[0] == 4

    # A running run whose process is alive is never removed, even when asked for.
    assert main(["runs", "--prune", "--status", "running", "--yes", "--db", str(db)]) == EXIT_OK
    assert "nothing to remove" in capsys.readouterr().out
    assert live in listed()
    assert main(["runs", "--prune", "--status", "nope", "--db", str(db)]) == 2
    assert "status nope" in capsys.readouterr().err
    assert main(["runs", "--status", "failed", "--db", str(db)]) == 2


def test_runs_lists_the_export_of_a_recorded_run(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    with Store(db) as store:
        run_id = _new_run(store)
        store.finish_run(run_id, status="recorded", diagnosis=None)
        document = json.loads(store.export_json(run_id))
    assert document["run"]["status"] == "recorded"
    with Store(tmp_path / "other.db") as other:
        other.import_json(json.dumps(document))
        assert other.run_info(run_id).status == "recorded"
