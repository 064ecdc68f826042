"""The store: lossless trace records, runs in SQLite, export/import, and no secrets on disk."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from secrets import token_hex

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from latdoc import (
    Chunk,
    ErrorKind,
    LatdocError,
    Phase,
    RequestTrace,
    Sample,
    Step,
    Store,
    TraceError,
    UsageError,
)
from latdoc.records import StepNote, TcpInfo
from latdoc.store import (
    SCHEMA_VERSION,
    BucketStats,
    RunFilter,
    RunInfo,
    SampleWriter,
    default_path,
    redact_url,
    sample_from_record,
    sample_to_record,
    schema,
    trace_from_record,
    trace_to_record,
)

ANY_INT = st.integers()


ANY_TEXT = st.text()


INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


SAFE_TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._:/", max_size=30)


CLEAN_URLS = st.sampled_from(
    ["https://api.example.com/v1/chat/completions", "http://127.0.0.1:8000/v1/completions"]
)


OFFSETS = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


def traces(
    ints: st.SearchStrategy[int] = ANY_INT,
    text: st.SearchStrategy[str] = ANY_TEXT,
    urls: st.SearchStrategy[str] = ANY_TEXT,
) -> st.SearchStrategy[RequestTrace]:
    """Any trace: every field drawn, each optional one ``None`` some of the time."""
    opt_int = st.none() | ints
    opt_text = st.none() | text
    chunks = st.lists(st.builds(Chunk, t_ns=ints, chars=ints, tokens=ints), max_size=12)
    tcp_info = st.builds(
        TcpInfo,
        rtt_us=ints,
        rttvar_us=ints,
        min_rtt_us=opt_int,
        retransmits=ints,
        snd_cwnd=ints,
        bytes_acked=opt_int,
        bytes_received=opt_int,
    )
    errors = st.builds(
        TraceError,
        kind=st.sampled_from(ErrorKind),
        phase=st.sampled_from(Phase),
        message=text,
        status=opt_int,
        retry_after_s=st.none() | st.floats(min_value=0, max_value=1e9),
    )
    return st.builds(
        RequestTrace,
        started_at=st.datetimes(timezones=st.none() | st.just(UTC) | OFFSETS),
        t0_ns=ints,
        url=urls,
        model=text,
        dialect=text,
        http_version=opt_text,
        remote_ip=opt_text,
        connection_id=opt_int,
        new_connection=st.none() | st.booleans(),
        queue_done_ns=opt_int,
        dns_done_ns=opt_int,
        connect_done_ns=opt_int,
        tls_done_ns=opt_int,
        sent_ns=opt_int,
        sent_acked=st.booleans(),
        first_byte_ns=opt_int,
        first_token_ns=opt_int,
        done_ns=opt_int,
        status=opt_int,
        chunks=chunks.map(tuple),
        chunk_tokens_exact=st.booleans(),
        prompt_tokens=opt_int,
        output_tokens=opt_int,
        output_tokens_exact=st.booleans(),
        cached_prompt_tokens=opt_int,
        finish_reason=opt_text,
        request_bytes=opt_int,
        response_bytes=opt_int,
        server_timing=st.dictionaries(
            text, st.floats(allow_nan=False, allow_infinity=False) | ints, max_size=4
        ),
        tcp_info=st.none() | tcp_info,
        error=st.none() | errors,
        started_ns=opt_int,
        request_id=opt_text,
        response_id=opt_text,
        attempt=st.integers(min_value=1, max_value=2**31),
        pool_granted_ns=opt_int,
        write_start_ns=opt_int,
        arrival_clock=st.none() | st.sampled_from(["kernel", "loop"]),
        prompt_chars=opt_int,
        prompt_tokens_estimated=opt_int,
        keepalive_comments=opt_int,
        first_keepalive_ns=opt_int,
        last_keepalive_ns=opt_int,
    )


def samples(
    traces: st.SearchStrategy[RequestTrace],
    ints: st.SearchStrategy[int],
    text: st.SearchStrategy[str],
) -> st.SearchStrategy[Sample]:
    return st.builds(
        Sample,
        step=st.sampled_from(Step),
        trace=traces,
        target_prompt_tokens=st.none() | ints,
        concurrency=ints,
        cold=st.booleans(),
        index=ints,
        loop_lag_ms=st.none() | st.floats(0, 1e6, allow_nan=False),
        worker=st.none() | st.integers(0, 10_000),
    )


T0 = datetime(2026, 11, 29, 20, 15, 2, tzinfo=UTC)


URL = "https://api.example.com/v1/chat/completions"


class Clock:
    """A clock that moves one minute per reading."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        now = self.now
        self.now += timedelta(minutes=1)
        return now


def make_trace(
    *, ttft_ms: int = 120, error: TraceError | None = None, url: str = URL
) -> RequestTrace:
    return RequestTrace(
        started_at=T0,
        t0_ns=10**12,
        url=url,
        model="m",
        dialect="openai-chat",
        http_version="HTTP/1.1",
        new_connection=True,
        dns_done_ns=1_000_000,
        connect_done_ns=3_000_000,
        tls_done_ns=9_000_000,
        sent_ns=9_500_000,
        first_byte_ns=ttft_ms * 1_000_000 - 100,
        first_token_ns=None if error else ttft_ms * 1_000_000,
        done_ns=None if error else (ttft_ms + 50) * 1_000_000,
        status=None if error else 200,
        chunks=()
        if error
        else (Chunk(ttft_ms * 1_000_000, 3, 1), Chunk(ttft_ms * 1_000_001, 4, 1)),
        prompt_tokens=512,
        output_tokens=None if error else 2,
        server_timing={"openai-processing-ms": 97.0},
        error=error,
    )


def make_sample(index: int, *, ttft_ms: int = 120, error: TraceError | None = None) -> Sample:
    trace = make_trace(ttft_ms=ttft_ms, error=error)
    return Sample("length", trace, target_prompt_tokens=512, concurrency=2, index=index)


BROKEN = TraceError(ErrorKind.HTTP, Phase.WAIT, "rate limited", status=429)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with Store(db, clock=Clock()) as store:
        yield store


def new_run(store: Store, **meta: object) -> str:
    return store.new_run(endpoint=URL, model="m", scenario="chat", meta=meta)


@given(traces())
def test_any_trace_survives_its_record_and_json(trace: RequestTrace) -> None:
    record = trace_to_record(trace)
    assert trace_from_record(record) == trace
    assert trace_from_record(json.loads(json.dumps(record, allow_nan=False))) == trace


@given(samples(traces(), ANY_INT, ANY_TEXT))
def test_any_sample_survives_its_record_and_json(sample: Sample) -> None:
    record = sample_to_record(sample)
    assert sample_from_record(record) == sample
    assert sample_from_record(json.loads(json.dumps(record, allow_nan=False))) == sample


def test_a_version_1_sample_record_loads_without_loop_lag() -> None:
    sample = make_sample(3)
    record = sample_to_record(dataclasses.replace(sample, loop_lag_ms=12.5))
    assert record["v"] == 3
    assert sample_from_record(record).loop_lag_ms == 12.5
    old = {k: v for k, v in record.items() if k not in ("loop_lag_ms", "worker")} | {"v": 1}
    assert sample_from_record(old) == sample


def test_a_version_2_sample_record_loads_without_a_worker() -> None:
    sample = make_sample(3)
    record = sample_to_record(dataclasses.replace(sample, worker=2))
    assert sample_from_record(record).worker == 2
    old = {k: v for k, v in record.items() if k != "worker"} | {"v": 2}
    assert sample_from_record(old) == sample
    with pytest.raises(ValueError, match=r"sample\.worker"):
        sample_from_record(record | {"worker": -1})


def test_a_version_2_trace_from_before_the_client_delay_loads_with_none() -> None:
    trace = dataclasses.replace(
        make_trace(), pool_granted_ns=0, write_start_ns=9_100_000, arrival_clock="kernel"
    )
    record = trace_to_record(trace)
    assert trace_from_record(record) == trace
    added = ("pool_granted_ns", "write_start_ns", "arrival_clock")
    old = {k: v for k, v in record.items() if k not in added}
    loaded = trace_from_record(old)
    assert loaded == make_trace()
    assert (loaded.pool_granted_ns, loaded.write_start_ns, loaded.arrival_clock) == (None,) * 3
    assert loaded.client_delay_ms is None
    assert loaded.send_ms == pytest.approx(0.5)
    assert trace.client_delay_ms == pytest.approx(0.1)
    assert trace.send_ms == pytest.approx(0.4)
    with pytest.raises(ValueError, match="write_start_ns"):
        trace_from_record(record | {"write_start_ns": "soon"})


def test_a_version_2_trace_record_loads_without_the_asked_wait(db: Path) -> None:
    asked = dataclasses.replace(BROKEN, retry_after_s=2.5)
    record = trace_to_record(make_trace(error=asked))
    assert record["v"] == 3 and record["error"]["retry_after_s"] == 2.5
    assert trace_from_record(record).error == asked
    old_error = {k: v for k, v in record["error"].items() if k != "retry_after_s"}
    old = record | {"v": 2, "error": old_error}
    assert trace_from_record(old) == make_trace(error=BROKEN)
    # As a store written before version 3 holds it: the row's JSON is read back as is.
    with Store(db) as store:
        run_id = new_run(store)
        store.add_sample(run_id, make_sample(0, error=asked))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sample_traces SET trace = ?", (json.dumps(old),))
    with Store(db) as store:
        _, (sample,), _ = store.load_run(run_id)
    assert sample.trace.error == BROKEN and sample.trace.error.retry_after_s is None


def test_record_names_every_field_in_plain_json_types() -> None:
    trace = dataclasses.replace(
        make_trace(error=BROKEN), tcp_info=TcpInfo(1500, 200, None, 0, 10, None, 4096)
    )
    record = trace_to_record(trace)
    assert set(record) - {"v"} == {f.name for f in dataclasses.fields(RequestTrace)}
    assert record["v"] == 3
    assert (record["request_id"], record["response_id"], record["attempt"]) == (None, None, 1)
    assert record["started_at"] == "2026-11-29T20:15:02+00:00"
    assert record["first_token_ns"] is None
    assert record["error"] == {
        "kind": "http",
        "phase": "wait",
        "message": "rate limited",
        "status": 429,
        "retry_after_s": None,
    }
    assert record["tcp_info"]["min_rtt_us"] is None
    ok = trace_to_record(make_trace())
    assert ok["chunks"] == {"t_ns": [120_000_000, 120_000_120], "chars": [3, 4], "tokens": [1, 1]}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"v": 4}, "trace record version 4"),
        ({"proxy_headers": {"server": 1}}, "trace.proxy_headers: expected an object of strings"),
        ({"attempt": 0}, "trace.attempt: expected 1 or more"),
        (
            {
                "error": {
                    "kind": "http",
                    "phase": "wait",
                    "message": "m",
                    "status": 429,
                    "retry_after_s": "2",
                }
            },
            "trace.error.retry_after_s: expected a number",
        ),
        ({"request_id": 7}, "trace.request_id: expected a string"),
        ({"t0_ns": "1"}, "trace.t0_ns: expected an integer"),
        ({"new_connection": 1}, "trace.new_connection: expected true or false"),
        ({"started_at": "yesterday"}, "trace.started_at: expected an ISO 8601"),
        ({"chunks": {"t_ns": [1], "chars": [], "tokens": []}}, "differ in length"),
    ],
)
def test_bad_trace_records_are_refused_by_field(change: dict[str, object], message: str) -> None:
    record = trace_to_record(make_trace()) | change
    with pytest.raises(ValueError, match=re.escape(message)):
        trace_from_record(record)


def test_a_version_2_trace_record_loads_without_proxy_headers() -> None:
    trace = dataclasses.replace(make_trace(), proxy_headers={"server": "nginx/1.22.1"})
    record = trace_to_record(trace)
    assert trace_from_record(record) == trace
    old = {k: v for k, v in record.items() if k != "proxy_headers"} | {"v": 2}
    assert trace_from_record(old) == make_trace()


def test_missing_field_is_named() -> None:
    record = trace_to_record(make_trace())
    del record["done_ns"]
    with pytest.raises(ValueError, match="missing 'done_ns'"):
        trace_from_record(record)


@given(st.lists(samples(traces(INT64, SAFE_TEXT, CLEAN_URLS), INT64, SAFE_TEXT), max_size=4))
def test_samples_come_back_from_the_database_equal(stored: list[Sample]) -> None:
    with Store(":memory:") as store:
        run_id = new_run(store)
        for sample in stored:
            store.add_sample(run_id, sample)
        _, loaded, _ = store.load_run(run_id)
    assert loaded == sorted(stored, key=lambda s: s.index)


def test_runs_are_listed_newest_first_with_counts(store: Store) -> None:
    first = new_run(store, tool="latdoc 0.1.0", db=Path("/data/x.db"))
    second = new_run(store)
    third = new_run(store)
    for i in range(3):
        store.add_sample(second, make_sample(i, error=BROKEN if i == 1 else None))
    store.finish_run(second, status="done", diagnosis={"verdict": {"primary": "queueing"}})
    store.finish_run(first, status="failed", diagnosis=None)

    runs = store.list_runs()
    assert [r.run_id for r in runs] == [third, second, first]
    newest, middle, oldest = runs
    assert (newest.status, newest.requests, newest.failed, newest.finished_at) == (
        "running",
        0,
        0,
        None,
    )
    assert (middle.status, middle.requests, middle.failed, middle.verdict) == (
        "done",
        3,
        1,
        "queueing",
    )
    assert middle.started_at == T0 + timedelta(minutes=1)
    assert middle.finished_at == T0 + timedelta(minutes=3)
    assert (oldest.status, oldest.verdict, oldest.meta) == (
        "failed",
        None,
        {"tool": "latdoc 0.1.0", "db": "/data/x.db"},
    )
    assert [r.run_id for r in store.list_runs(limit=2)] == [third, second]


def test_run_ids_are_short_unique_and_sortable_by_time(db: Path) -> None:
    with Store(db, clock=lambda: T0) as store:
        ids = {new_run(store) for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"20261129-201502-[0-9a-f]{6}", i) for i in ids)
    with Store(db, clock=lambda: T0 + timedelta(seconds=1)) as store:
        later = new_run(store)
    assert later > max(ids)


def test_a_run_loads_by_a_unique_prefix_of_its_id(store: Store) -> None:
    run_id = new_run(store)
    store.add_sample(run_id, make_sample(0))
    info, loaded, diagnosis = store.load_run(run_id[:17])
    assert info.run_id == run_id
    assert loaded == [make_sample(0)]
    assert diagnosis is None


def test_an_ambiguous_prefix_lists_the_candidates(db: Path) -> None:
    with Store(db, clock=lambda: T0) as store:
        a, b = new_run(store), new_run(store)
        with pytest.raises(UsageError, match="ambiguous") as caught:
            store.load_run("20261129")
    assert a in str(caught.value)
    assert b in str(caught.value)


def test_a_missing_run_is_a_usage_error_that_says_where_to_look(store: Store, db: Path) -> None:
    new_run(store)
    expected = f"no run 2025 in {db}; `latdoc runs` lists them"
    with pytest.raises(UsageError) as caught:
        store.load_run("2025")
    assert str(caught.value) == expected
    with pytest.raises(UsageError, match=re.escape(expected)):
        store.add_sample("2025", make_sample(0))
    with pytest.raises(UsageError, match=re.escape(expected)):
        store.finish_run("2025", status="done", diagnosis=None)
    with pytest.raises(UsageError, match="no run  in"):
        store.load_run("")


def test_finish_run_takes_only_a_final_status(store: Store) -> None:
    run_id = new_run(store)
    with pytest.raises(ValueError, match="done, interrupted, failed or recorded"):
        store.finish_run(run_id, status="running", diagnosis=None)


def test_diagnosis_is_kept_as_json(store: Store) -> None:
    run_id = new_run(store)
    diagnosis = {"verdict": {"primary": "input_length", "confidence": 0.8}, "shares_ms": {"a": 1.5}}
    store.finish_run(run_id, status="done", diagnosis=diagnosis)
    info, _, loaded = store.load_run(run_id)
    assert loaded == diagnosis
    assert info.verdict == "input_length"


def test_the_journal_is_wal_and_foreign_keys_hold(db: Path) -> None:
    with Store(db) as store:
        new_run(store)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 16384
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.execute("PRAGMA foreign_keys = ON")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO samples (run_id, idx, step, concurrency, cold, ok) "
            "VALUES ('nope', 0, 'x', 1, 0, 1)"
        )
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO sample_traces (seq, trace) VALUES (12345, '{}')")
    conn.close()


def test_a_store_and_its_sibling_wait_for_a_lock_as_long_as_they_were_told(db: Path) -> None:
    """Not the 30 s of the default: a writer thread's sibling connection waits as its store."""
    with Store(db, busy_timeout_ms=50) as store, store.sibling() as sibling:
        locker = sqlite3.connect(db, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")
        for each in (store, sibling):
            started = time.monotonic()
            with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                new_run(each)
            assert time.monotonic() - started < 5
        locker.execute("ROLLBACK")
        locker.close()


def test_export_then_import_gives_the_same_run(store: Store, tmp_path: Path) -> None:
    run_id = new_run(store, python="3.11.7", options={"concurrency": [1, 4]})
    for i in range(4):
        store.add_sample(run_id, make_sample(i, ttft_ms=100 + i, error=BROKEN if i == 3 else None))
    store.finish_run(run_id, status="interrupted", diagnosis={"verdict": {"primary": "decode"}})
    text = store.export_json(run_id)

    document = json.loads(text)
    assert (document["format"], document["version"]) == ("latdoc-run", 1)
    assert document["run"]["run_id"] == run_id
    assert len(document["samples"]) == 4

    with Store(tmp_path / "other.db") as other:
        assert other.import_json(text) == run_id
        assert other.load_run(run_id) == store.load_run(run_id)
        assert other.export_json(run_id) == text
        with pytest.raises(UsageError, match="already in"):
            other.import_json(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "invalid JSON"),
        ('["latdoc-run"]', "format is None"),
        ('{"format": "pyperf", "version": 1}', "format is 'pyperf'"),
        ('{"format": "latdoc-run", "version": 2}', "version 2 is not one this latdoc reads (1)"),
        ('{"format": "latdoc-run", "version": "1"}', "version '1' is not one"),
        ('{"format": "latdoc-run", "version": 1, "run": {}}', "broken latdoc run export"),
    ],
)
def test_import_refuses_what_it_cannot_read(store: Store, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        store.import_json(text)
    assert store.list_runs() == []


def test_import_refuses_a_broken_sample(store: Store) -> None:
    run_id = new_run(store)
    store.add_sample(run_id, make_sample(0))
    document = json.loads(store.export_json(run_id))
    document["run"]["run_id"] = "other"
    document["samples"][0]["trace"]["done_ns"] = "soon"
    with pytest.raises(UsageError, match=r"trace\.done_ns: expected an integer"):
        store.import_json(json.dumps(document))
    assert [r.run_id for r in store.list_runs()] == [run_id]


def test_a_newer_schema_is_refused_and_left_untouched(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.execute("CREATE TABLE runs_v2 (x)")
    conn.commit()
    conn.close()
    before = db.read_bytes()

    with pytest.raises(LatdocError, match=f"schema version {SCHEMA_VERSION + 1}, newer than"):
        Store(db)
    assert db.read_bytes() == before
    assert not Path(f"{db}-wal").exists()


def test_a_foreign_database_is_refused(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE notes (text)")
    conn.commit()
    conn.close()
    with pytest.raises(LatdocError, match="not a latdoc store"):
        Store(db)


def test_a_file_that_is_not_sqlite_is_refused(db: Path) -> None:
    db.write_text("hello, this is not a database at all" * 100)
    with pytest.raises(UsageError, match="cannot use"):
        Store(db)


def test_a_version_4_store_gains_the_worker_column_and_keeps_its_samples(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    schema.migrate(conn, str(db), schema.MIGRATIONS[:4])
    trace = make_trace()
    conn.execute(
        "INSERT INTO runs (run_id, started_at, status, endpoint, model, scenario, meta, kind) "
        "VALUES ('r4', '2026-11-29T20:15:02.000000+00:00', 'done', ?, 'm', '', '{}', 'load')",
        (URL,),
    )
    conn.execute(
        "INSERT INTO samples (seq, run_id, idx, step, concurrency, cold, ok) "
        "VALUES (1, 'r4', 0, 'load', 2, 0, 1)"
    )
    conn.execute(
        "INSERT INTO sample_traces (seq, trace) VALUES (1, ?)",
        (json.dumps(trace_to_record(trace)),),
    )
    conn.close()
    with Store(db) as store:
        store.add_sample("r4", Sample(Step.LOAD, trace, concurrency=2, index=1, worker=3))
        _, kept, _ = store.load_run("r4")
    assert [(s.index, s.worker) for s in kept] == [(0, None), (1, 3)]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    assert conn.execute("SELECT worker FROM samples ORDER BY idx").fetchall() == [(None,), (3,)]
    conn.close()


def test_migrations_run_in_order_from_the_version_found(db: Path) -> None:
    with Store(db) as store:
        run_id = new_run(store)

    def add_tags(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE runs ADD COLUMN tags TEXT")

    migrations: tuple[Callable[[sqlite3.Connection], None], ...] = (*schema.MIGRATIONS, add_tags)
    conn = sqlite3.connect(db, isolation_level=None)
    assert schema.migrate(conn, str(db), migrations) == SCHEMA_VERSION
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    assert conn.execute("SELECT run_id, tags FROM runs").fetchall() == [(run_id, None)]
    assert schema.migrate(conn, str(db), migrations) == SCHEMA_VERSION + 1
    conn.close()
    with pytest.raises(LatdocError, match="newer than this latdoc"):
        Store(db)


def test_a_version_2_store_gets_its_notes_from_the_stored_diagnosis(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    assert schema.migrate(conn, str(db), schema.MIGRATIONS[:2]) == 0
    diagnosis = {
        "verdict": {"primary": "healthy"},
        "notes": [
            {"step": "length", "text": "8192 tokens left out"},
            {"step": "no-such-step", "text": "skipped"},
        ],
    }
    conn.execute(
        "INSERT INTO runs (run_id, started_at, status, endpoint, model, scenario, meta, "
        "diagnosis) VALUES ('20261129-201502-a1b2c3', '2026-11-29T20:15:02.000000+00:00', "
        "'done', 'https://api.example.com/v1', 'm', 'chat', '{}', ?)",
        (json.dumps(diagnosis),),
    )
    conn.close()
    with Store(db) as store:
        info, _, _ = store.load_run("20261129")
        exported = json.loads(store.export_json(info.run_id))
    assert info.notes == (StepNote(Step.LENGTH, "8192 tokens left out"),)
    assert exported["run"]["notes"] == [{"step": "length", "text": "8192 tokens left out"}]


def test_notes_are_kept_as_data_and_come_back_typed(db: Path) -> None:
    notes = [StepNote(Step.LOAD, "the concurrency probe left out"), StepNote(Step.RUN, "cut")]
    with Store(db) as store:
        run_id = new_run(store)
        store.finish_run(run_id, status="done", diagnosis=None, notes=notes)
        info, _, _ = store.load_run(run_id)
        listed = store.list_runs()
    assert info.notes == tuple(notes)
    assert listed[0].notes == tuple(notes)


def test_a_version_1_store_is_migrated_and_keeps_its_samples(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    assert schema.migrate(conn, str(db), schema.MIGRATIONS[:1]) == 0
    conn.execute(
        "INSERT INTO runs (run_id, started_at, status, endpoint, model, scenario, meta) "
        "VALUES ('20261129-201502-a1b2c3', '2026-11-29T20:15:02.000000+00:00', 'done', "
        "'https://api.example.com/v1', 'm', 'chat', '{}')"
    )
    conn.execute(
        "INSERT INTO samples (run_id, idx, step, concurrency, cold, ok, trace) "
        "VALUES ('20261129-201502-a1b2c3', 0, 'network', 1, 1, 1, ?)",
        (json.dumps(trace_to_record(make_trace())),),
    )
    conn.close()
    with Store(db) as store:
        _, samples, _ = store.load_run("20261129-201502-a1b2c3")
        store.add_sample(
            "20261129-201502-a1b2c3", dataclasses.replace(make_sample(1), loop_lag_ms=3.5)
        )
        _, samples_after, _ = store.load_run("20261129-201502-a1b2c3")
    assert [s.trace for s in samples] == [make_trace()]
    assert [s.loop_lag_ms for s in samples_after] == [None, 3.5]


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("https://user:pass@host/v1", "https://***@host/v1"),
        ("https://sk-abc@host", "https://***@host"),
        (
            "https://h/v1?api_key=K&model=m&api-key=K&key=K&token=T&access_token=A&sig=S",
            "https://h/v1?api_key=***&model=m&api-key=***&key=***&token=***&access_token=***&sig=***",
        ),
        ("https://h/v1?X-Api-Key=K#access_token=T", "https://h/v1?X-Api-Key=***#access_token=***"),
        ("https://h/v1?max_tokens=5&tokenizer=x", "https://h/v1?max_tokens=5&tokenizer=x"),
        ("https://h/a@b/v1?q=1", "https://h/a@b/v1?q=1"),
        ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
    ],
)
def test_redact_url(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


def _file_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


def test_no_key_reaches_the_database_file(db: Path, tmp_path: Path) -> None:
    key = "kq" + token_hex(16)
    known = "zz" + token_hex(16)
    bearer = "sk-" + token_hex(16)
    leaky = f"https://me:{key}@api.example.com/v1?api_key={key}&model=m#access_token={key}"
    error = TraceError(
        ErrorKind.HTTP, Phase.WAIT, f"401 from {leaky} (Authorization: Bearer {bearer})", 401
    )
    with Store(db, secrets=[known]) as store:
        run_id = store.new_run(
            endpoint=leaky,
            model=f"m-{known}",
            scenario="chat",
            meta={
                "api_key": key,
                "headers": {"X-Api-Key": key, "Accept": "text/event-stream"},
                "argv": ["--api-key", key, f"--token={key}", "--url", leaky, "-k"],
            },
        )
        trace = dataclasses.replace(make_trace(url=leaky, error=error), finish_reason=known)
        store.add_sample(run_id, Sample(step="network", trace=trace))
        store.finish_run(run_id, status="failed", diagnosis={"endpoint": leaky, "note": bearer})
        exported = store.export_json(run_id)
        info, (sample,), _ = store.load_run(run_id)

    assert info.endpoint == "https://***@api.example.com/v1?api_key=***&model=m#access_token=***"
    assert info.meta["argv"][:3] == ["--api-key", "***", "--token=***"]
    assert info.meta["argv"][-1] == "-k"
    assert info.meta["headers"]["Accept"] == "text/event-stream"
    assert sample.trace.url == info.endpoint
    assert sample.trace.error is not None
    assert "Bearer ***" in sample.trace.error.message

    with Store(tmp_path / "imported.db", secrets=[known]) as other:
        leaked_again = exported.replace("***@", f"me:{key}@").replace("key=***", f"key={key}")
        assert key in leaked_again
        other.import_json(leaked_again)

    for path in (db, tmp_path / "imported.db"):
        data = _file_bytes(path)
        assert data
        for secret in (key, known, bearer):
            assert secret.encode() not in data
    assert key not in exported


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.delenv("LATDOC_DB", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


def test_default_path_prefers_latdoc_db(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("LATDOC_DB", str(tmp_path / "x" / "mine.db"))
    clean_env.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_path() == tmp_path / "x" / "mine.db"
    assert (tmp_path / "x").is_dir()
    with Store() as store:
        new_run(store)
        assert store.path == str(tmp_path / "x" / "mine.db")
    assert (tmp_path / "x" / "mine.db").exists()


def test_default_path_uses_xdg_data_home(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_path() == tmp_path / "xdg" / "latdoc" / "latdoc.db"
    assert (tmp_path / "xdg" / "latdoc").is_dir()


def test_default_path_falls_back_to_home(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("XDG_DATA_HOME", "relative/ignored")
    assert default_path() == tmp_path / "home" / ".local" / "share" / "latdoc" / "latdoc.db"
    assert (tmp_path / "home" / ".local" / "share" / "latdoc").is_dir()


def test_run_info_is_a_frozen_record() -> None:
    info = RunInfo("r", T0, None, "done", URL, "m", "chat", 0, 0, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.status = "failed"  # type: ignore[misc]


def test_a_version_1_trace_record_loads_without_ids_or_wall_clock_nanoseconds() -> None:
    trace = dataclasses.replace(
        make_trace(), started_ns=1_764_447_302_000_000_123, request_id="r1", attempt=2
    )
    old = {
        k: v
        for k, v in trace_to_record(trace).items()
        if k not in ("started_ns", "request_id", "response_id", "attempt")
    } | {"v": 1}
    assert trace_from_record(old) == make_trace()


def _trace_at(
    start: datetime, ttft_ms: float, tokens: int, error: TraceError | None
) -> RequestTrace:
    first = round(ttft_ms * 1_000_000)
    return dataclasses.replace(
        make_trace(error=error),
        started_at=start,
        first_token_ns=None if error else first,
        done_ns=None if error else first + tokens * 7_000_001,
        output_tokens=None if error else tokens,
    )


def _v3_store(db: Path, traces: list[RequestTrace]) -> str:
    conn = sqlite3.connect(db, isolation_level=None)
    assert schema.migrate(conn, str(db), schema.MIGRATIONS[:3]) == 0
    run_id = "20261129-201502-a1b2c3"
    conn.execute(
        "INSERT INTO runs (run_id, started_at, status, endpoint, model, scenario, meta) "
        f"VALUES ('{run_id}', '2026-11-29T20:15:02.000000+00:00', 'done', "
        "'https://api.example.com/v1', 'm', 'chat', '{}')"
    )
    for i, trace in enumerate(traces):
        record = {
            k: v
            for k, v in trace_to_record(trace).items()
            if k not in ("started_ns", "request_id", "response_id", "attempt")
        } | {"v": 1}
        conn.execute(
            "INSERT INTO samples (run_id, idx, step, concurrency, cold, ok, error_code, "
            "prompt_tokens, ttft_ms, total_ms, loop_lag_ms, trace) "
            "VALUES (?, ?, 'load', 4, 0, ?, ?, ?, ?, ?, 1.5, ?)",
            (
                run_id,
                i,
                trace.ok,
                None if trace.error is None else trace.error.code,
                trace.prompt_tokens,
                trace.ttft_ms,
                trace.total_ms,
                json.dumps(record),
            ),
        )
    conn.close()
    return run_id


def test_a_version_3_store_is_migrated_with_its_summary_columns_filled(db: Path) -> None:
    start = datetime(2026, 11, 29, 23, 59, 59, 999_999, tzinfo=timezone(timedelta(hours=-5)))
    traces = [
        _trace_at(start, 120.5, 10, None),
        _trace_at(start + timedelta(hours=1), 80.0, 1, None),
        _trace_at(start.replace(tzinfo=None), 0, 0, BROKEN),
    ]
    run_id = _v3_store(db, traces)
    with Store(db) as store:
        _, samples, _ = store.load_run(run_id)
    assert [s.trace for s in samples] == traces
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    rows = conn.execute(
        "SELECT started_ns, ttft_ms, tpot_ms, output_tokens, status, attempt, ok, error_code, "
        "loop_lag_ms FROM samples ORDER BY idx"
    ).fetchall()
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert tables == {"runs", "samples", "sample_traces"}
    utc_start = start.astimezone(UTC)
    naive_as_utc = start.replace(tzinfo=UTC)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert rows == [
        (
            (utc_start - epoch) // timedelta(microseconds=1) * 1000,
            120.5,
            traces[0].tpot_ms,
            10,
            200,
            1,
            1,
            None,
            1.5,
        ),
        (
            (utc_start + timedelta(hours=1) - epoch) // timedelta(microseconds=1) * 1000,
            80.0,
            None,
            1,
            200,
            1,
            1,
            None,
            1.5,
        ),
        ((naive_as_utc - epoch) // timedelta(microseconds=1) * 1000, None, None, None, None, 1, 0,
         BROKEN.code, 1.5),
    ]  # fmt: skip


def _day_of_samples(n: int, seed: int) -> list[Sample]:
    rng = random.Random(seed)
    day = datetime(2026, 11, 29, tzinfo=UTC)
    out = []
    for i in range(n):
        start = day + timedelta(seconds=rng.uniform(0, 2 * 86_400))
        failed = rng.random() < 0.1
        error = TraceError(ErrorKind.HTTP, Phase.WAIT, "busy", status=rng.choice((429, 503)))
        trace = _trace_at(
            start, rng.lognormvariate(5, 0.5), rng.randint(1, 300), error if failed else None
        )
        if i % 3 == 0:
            trace = dataclasses.replace(trace, started_ns=schema.epoch_ns(start) + 7)
        out.append(Sample(Step.TRAFFIC if i % 5 else Step.LOAD, trace, index=i))
    return out


def test_aggregate_by_hour_of_day_equals_numpy_on_the_decoded_traces(store: Store) -> None:
    samples = _day_of_samples(600, seed=4)
    run_a, run_b = new_run(store), new_run(store)
    store.add_samples(run_a, samples[:400])
    store.add_samples(run_b, samples[400:])
    got = store.aggregate([run_a, run_b[:17]], bucket=timedelta(hours=1), cycle=timedelta(days=1))

    expected = []
    for hour in range(24):
        group = [
            s.trace
            for s in samples
            if (s.trace.started_ns or schema.epoch_ns(s.trace.started_at)) // 3_600_000_000_000 % 24
            == hour
        ]
        if not group:
            continue
        ttft = np.array([t.ttft_ms for t in group if t.ttft_ms is not None])
        tpot = np.array([t.tpot_ms for t in group if t.tpot_ms is not None])
        codes: dict[str, int] = {}
        for t in group:
            if t.error is not None:
                codes[t.error.code] = codes.get(t.error.code, 0) + 1
        expected.append(
            BucketStats(
                bucket=hour,
                start=timedelta(hours=hour),
                requests=len(group),
                errors=sum(not t.ok for t in group),
                ttft_p50_ms=float(np.percentile(ttft, 50)),
                ttft_p95_ms=float(np.percentile(ttft, 95)),
                tpot_p50_ms=float(np.percentile(tpot, 50)),
                error_codes=codes,
            )
        )
    assert list(got) == expected
    assert sum(b.requests for b in got) == 600


def test_aggregate_by_absolute_bucket_offset_and_steps(store: Store) -> None:
    samples = _day_of_samples(200, seed=9)
    run_id = new_run(store)
    store.add_samples(run_id, samples)
    got = store.aggregate(
        run_id, bucket=timedelta(hours=6), offset=timedelta(hours=2), steps=[Step.LOAD]
    )
    loads = [s.trace for s in samples if s.step is Step.LOAD]
    six_hours = 6 * 3_600_000_000_000
    keys = sorted(
        {
            ((t.started_ns or schema.epoch_ns(t.started_at)) + 7_200_000_000_000) // six_hours
            for t in loads
        }
    )
    assert [b.bucket for b in got] == keys
    assert got[0].start == timedelta(hours=6 * keys[0])
    assert sum(b.requests for b in got) == len(loads)
    assert store.aggregate(run_id, steps=[Step.NETWORK]) == ()


def test_aggregate_refuses_a_cycle_that_is_not_whole_buckets(store: Store) -> None:
    run_id = new_run(store)
    with pytest.raises(ValueError, match="not a whole number of buckets"):
        store.aggregate(run_id, bucket=timedelta(hours=5), cycle=timedelta(days=1))
    with pytest.raises(ValueError, match="longer than zero"):
        store.aggregate(run_id, bucket=timedelta(0))
    with pytest.raises(UsageError, match="no run"):
        store.aggregate("nope")
    with pytest.raises(UsageError, match="no run named 'nightly'"):
        store.aggregate(name="nightly")
    with pytest.raises(UsageError, match="name the runs"):
        store.aggregate()


def test_aggregate_by_name_takes_every_run_of_that_name(store: Store) -> None:
    samples = _day_of_samples(90, seed=2)
    first, second = new_run(store, name="nightly"), new_run(store, name="nightly")
    other = new_run(store, name="other")
    for run_id, part in ((first, samples[:30]), (second, samples[30:60]), (other, samples[60:])):
        store.add_samples(run_id, part)
    by_name = store.aggregate(name="nightly", cycle=timedelta(days=1))
    by_ids = store.aggregate([first, second], cycle=timedelta(days=1))
    assert by_name == by_ids
    assert sum(b.requests for b in by_name) == 60


class StepClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _committed(db: Path) -> int:
    reader = sqlite3.connect(db)
    try:
        return int(reader.execute("SELECT count(*) FROM samples").fetchone()[0])
    finally:
        reader.close()


def test_a_batch_is_committed_when_full_and_when_its_oldest_sample_waited(db: Path) -> None:
    clock = StepClock()
    with Store(db) as store:
        run_id = new_run(store)
        writer = SampleWriter(store, run_id, max_samples=3, max_delay=0.25, clock=clock)
        with writer:
            writer.add(make_sample(0))
            writer.add(make_sample(1))
            assert (_committed(db), writer.pending) == (0, 2)
            writer.add(make_sample(2))
            assert (_committed(db), writer.pending) == (3, 0)
            writer.add(make_sample(3))
            clock.now = 0.24
            writer.add(make_sample(4))
            assert _committed(db) == 3
            clock.now = 0.26
            writer.add(make_sample(5))
            assert (_committed(db), writer.pending) == (6, 0)
            writer.add(make_sample(6))
        assert _committed(db) == 7
        _, loaded, _ = store.load_run(run_id)
    assert loaded == [make_sample(i) for i in range(7)]


def test_a_writer_that_crashes_keeps_the_batches_it_committed(db: Path) -> None:
    with Store(db) as store:
        run_id = new_run(store)
        writer = store.batch(run_id, max_samples=2)

        def crash() -> None:
            with writer:
                for i in range(5):
                    writer.add(make_sample(i))
                assert _committed(db) == 4
                raise RuntimeError("crash")

        with pytest.raises(RuntimeError, match="crash"):
            crash()
        assert writer.committed == 5
    assert _committed(db) == 5
    with pytest.raises(UsageError, match="no run"), Store(db) as store:
        store.batch("nope")


def test_ids_and_repeated_texts_are_scrubbed_like_any_other(db: Path) -> None:
    key = "sk-" + "a1" * 12
    trace = dataclasses.replace(
        make_trace(url=f"https://h/v1?api_key={key}"),
        request_id=f"req-{key}",
        response_id="chatcmpl-9f3a",
    )
    with Store(db, secrets=["hunter2-secret"]) as store:
        run_id = new_run(store)
        for i in range(3):
            store.add_sample(run_id, Sample(Step.TRAFFIC, trace, index=i))
        _, loaded, _ = store.load_run(run_id)
    assert {s.trace.request_id for s in loaded} == {"req-sk-***"}
    assert {s.trace.response_id for s in loaded} == {"chatcmpl-9f3a"}
    assert {s.trace.url for s in loaded} == {"https://h/v1?api_key=***"}
    assert key.encode() not in _file_bytes(db)


def test_update_meta_sets_whole_values_and_keeps_the_rest(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        run_id = store.new_run(
            endpoint=URL, model="m", scenario="chat", meta={"keep": 1, "counts": {"a": 1}}
        )
        store.update_meta(run_id, {"counts": {"b": None}, "skipped_ticks": 3})
        store.update_meta(run_id, {"skipped_ticks": 4})
        assert store.run_info(run_id).meta == {
            "keep": 1,
            "counts": {"b": None},
            "skipped_ticks": 4,
        }
        with pytest.raises(UsageError, match="no run"):
            store.update_meta("20260101-000000-000000", {"x": 1})


def test_prompt_tokens_of_a_step_come_from_the_narrow_rows_in_order(store: Store) -> None:
    run_id = new_run(store)
    counted = [
        Sample(Step.CALIBRATION, dataclasses.replace(make_trace(), prompt_tokens=n), index=i)
        for i, n in enumerate((40, None, 9))
    ]
    store.add_samples(run_id, [*counted, Sample(Step.NETWORK, make_trace(), index=3)])
    assert store.prompt_tokens(run_id, Step.CALIBRATION) == [40, None, 9]
    assert store.prompt_tokens(run_id, Step.LOAD) == []


def test_a_trace_from_before_prompt_sizes_were_kept_loads_with_none() -> None:
    trace = dataclasses.replace(make_trace(), prompt_chars=8_400, prompt_tokens_estimated=2_100)
    record = trace_to_record(trace)
    assert trace_from_record(record) == trace
    old = {k: v for k, v in record.items() if k not in ("prompt_chars", "prompt_tokens_estimated")}
    loaded = trace_from_record(old)
    assert (loaded.prompt_chars, loaded.prompt_tokens_estimated) == (None, None)
    with pytest.raises(ValueError, match="prompt_chars"):
        trace_from_record(record | {"prompt_chars": "long"})


def test_a_version_6_store_gains_the_run_indexes_and_serve_waits_for_it(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    schema.migrate(conn, str(db), schema.MIGRATIONS[:6])
    conn.execute(
        "INSERT INTO runs (run_id, started_at, status, endpoint, model, scenario, meta, kind) "
        "VALUES ('r6', '2026-11-29T20:15:02.000000+00:00', 'done', ?, 'm', '', '{}', 'load')",
        (URL,),
    )
    conn.close()
    with pytest.raises(UsageError, match="older than this latdoc's"):
        Store(db, read_only=True)
    with Store(db) as store:
        assert [run.run_id for run in store.runs.target_runs("load", URL, "m")] == ["r6"]
    conn = sqlite3.connect(db)
    indexes = {
        row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
    }
    assert {"runs_kind", "runs_endpoint", "runs_running"} <= indexes
    plan = " ".join(
        row[3]
        for row in conn.execute("EXPLAIN QUERY PLAN SELECT count(*) FROM runs WHERE kind = 'load'")
    )
    assert "runs_kind" in plan, "a kind's runs are counted from the index, not every run"
    conn.close()
    with Store(db, read_only=True) as store:
        assert store.runs.count_runs(RunFilter(kind="load")) == 1
