"""The SQLite schema and its migrations, one function per version.

``PRAGMA user_version`` holds the schema version; ``PRAGMA application_id``
marks the file as a latdoc store. :func:`migrate` runs every migration newer
than the file, in one transaction, and refuses a file written by a newer
latdoc rather than touch it. A new schema version is one more function
appended to :data:`MIGRATIONS`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from latdoc.errors import LatdocError
from latdoc.i18n import Message
from latdoc.store._fields import INT64

APPLICATION_ID = 0x6C617464
"""``'latd'``: written into the SQLite header of every latdoc store."""

Migration = Callable[[sqlite3.Connection], None]


def _create_v1(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE runs (
            run_id      TEXT PRIMARY KEY,
            started_at  TEXT NOT NULL,
            finished_at TEXT,
            status      TEXT NOT NULL
                        CHECK (status IN ('running', 'done', 'interrupted', 'failed')),
            endpoint    TEXT NOT NULL,
            model       TEXT NOT NULL,
            scenario    TEXT NOT NULL,
            verdict     TEXT,
            meta        TEXT NOT NULL,
            diagnosis   TEXT
        )
        """
    )
    conn.execute("CREATE INDEX runs_started_at ON runs (started_at)")
    conn.execute(
        """
        CREATE TABLE samples (
            seq                  INTEGER PRIMARY KEY,
            run_id               TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            idx                  INTEGER NOT NULL,
            step                 TEXT NOT NULL,
            target_prompt_tokens INTEGER,
            concurrency          INTEGER NOT NULL,
            cold                 INTEGER NOT NULL,
            ok                   INTEGER NOT NULL,
            error_code           TEXT,
            prompt_tokens        INTEGER,
            ttft_ms              REAL,
            total_ms             REAL,
            trace                TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX samples_run ON samples (run_id, idx)")
    conn.execute("CREATE INDEX samples_step ON samples (run_id, step, target_prompt_tokens)")
    conn.execute("CREATE INDEX samples_error ON samples (error_code) WHERE error_code IS NOT NULL")


def _loop_lag_v2(conn: sqlite3.Connection) -> None:
    """Version 2: how late the measuring client's event loop ran during each sample."""
    conn.execute("ALTER TABLE samples ADD COLUMN loop_lag_ms REAL")


def _notes_and_kinds_v3(conn: sqlite3.Connection) -> None:
    """Version 3: what each step left out, kept as data rather than inside the report,
    and the kind of each run (a diagnosis, a probe, an arm of an experiment).

    Runs stored before it were all diagnoses, and get the notes their stored
    diagnosis document held.
    """
    conn.execute("ALTER TABLE runs ADD COLUMN notes TEXT")
    conn.execute("ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'diagnose'")
    conn.execute(
        "UPDATE runs SET notes = json_extract(diagnosis, '$.notes') "
        "WHERE diagnosis IS NOT NULL AND json_type(diagnosis, '$.notes') = 'array'"
    )


_SAMPLES_V4 = """
    CREATE TABLE samples (
        seq                  INTEGER PRIMARY KEY,
        run_id               TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        idx                  INTEGER NOT NULL,
        step                 TEXT NOT NULL,
        target_prompt_tokens INTEGER,
        concurrency          INTEGER NOT NULL,
        cold                 INTEGER NOT NULL,
        ok                   INTEGER NOT NULL,
        error_code           TEXT,
        prompt_tokens        INTEGER,
        ttft_ms              REAL,
        total_ms             REAL,
        loop_lag_ms          REAL,
        started_ns           INTEGER,
        tpot_ms              REAL,
        output_tokens        INTEGER,
        status               INTEGER,
        attempt              INTEGER NOT NULL DEFAULT 1
    )
"""

_TRACES_V4 = """
    CREATE TABLE sample_traces (
        seq   INTEGER PRIMARY KEY REFERENCES samples (seq) ON DELETE CASCADE,
        trace TEXT NOT NULL
    )
"""

_TPOT_FROM_TRACE = """
    CASE WHEN json_extract(trace, '$.first_token_ns') IS NOT NULL
          AND json_extract(trace, '$.done_ns') IS NOT NULL
          AND json_extract(trace, '$.output_tokens') >= 2
    THEN CAST(json_extract(trace, '$.done_ns') - json_extract(trace, '$.first_token_ns') AS REAL)
         / (json_extract(trace, '$.output_tokens') - 1) / 1000000.0
    END
"""


def _summaries_apart_v4(conn: sqlite3.Connection) -> None:
    """Version 4: the columns a report aggregates kept apart from the raw trace JSON.

    ``samples`` holds one narrow row per request (wall-clock start in epoch
    nanoseconds, TTFT, TPOT, total, outcome, tokens, the conditions it was sent
    under), so a report over a million requests scans tens of megabytes; the
    trace records, chunks and all, move to ``sample_traces``. Existing rows get
    the new columns from their trace JSON in the same pass that moves them.
    """
    conn.create_function("latdoc_epoch_ns", 1, epoch_ns_from_text, deterministic=True)
    conn.execute("ALTER TABLE samples RENAME TO samples_v3")
    conn.execute(_SAMPLES_V4)
    conn.execute(
        "INSERT INTO samples (seq, run_id, idx, step, target_prompt_tokens, concurrency, cold, "
        "ok, error_code, prompt_tokens, ttft_ms, total_ms, loop_lag_ms, started_ns, tpot_ms, "
        "output_tokens, status, attempt) "
        "SELECT seq, run_id, idx, step, target_prompt_tokens, concurrency, cold, ok, "
        "error_code, prompt_tokens, ttft_ms, total_ms, loop_lag_ms, "
        "latdoc_epoch_ns(json_extract(trace, '$.started_at')), "
        f"{_TPOT_FROM_TRACE}, json_extract(trace, '$.output_tokens'), "
        "json_extract(trace, '$.status'), coalesce(json_extract(trace, '$.attempt'), 1) "
        "FROM samples_v3"
    )
    conn.execute(_TRACES_V4)
    conn.execute("INSERT INTO sample_traces (seq, trace) SELECT seq, trace FROM samples_v3")
    conn.execute("DROP TABLE samples_v3")
    _sample_indexes_v4(conn)


def _sample_indexes_v4(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE INDEX samples_run ON samples (run_id, idx)")
    conn.execute("CREATE INDEX samples_step ON samples (run_id, step, target_prompt_tokens)")
    conn.execute("CREATE INDEX samples_error ON samples (error_code) WHERE error_code IS NOT NULL")


def epoch_ns(moment: datetime) -> int:
    """Nanoseconds since the Unix epoch; a naive ``moment`` is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def epoch_ns_from_text(text: object) -> int | None:
    """:func:`epoch_ns` of an ISO 8601 text, ``None`` for anything else."""
    if not isinstance(text, str):
        return None
    try:
        ns = epoch_ns(datetime.fromisoformat(text))
    except ValueError:
        return None
    return ns if ns in INT64 else None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _workers_v5(conn: sqlite3.Connection) -> None:
    """Version 5: which load worker (a local process or a Ray actor) sent each sample;
    ``NULL`` for a sample the measuring process sent itself, as every earlier one was."""
    conn.execute("ALTER TABLE samples ADD COLUMN worker INTEGER")


_RUNS_V6 = """
    CREATE TABLE runs_v6 (
        run_id      TEXT PRIMARY KEY,
        started_at  TEXT NOT NULL,
        finished_at TEXT,
        status      TEXT NOT NULL
                    CHECK (status IN ('running', 'done', 'interrupted', 'failed', 'recorded')),
        endpoint    TEXT NOT NULL,
        model       TEXT NOT NULL,
        scenario    TEXT NOT NULL,
        verdict     TEXT,
        meta        TEXT NOT NULL,
        diagnosis   TEXT,
        notes       TEXT,
        kind        TEXT NOT NULL DEFAULT 'diagnose',
        pid         INTEGER,
        host        TEXT,
        boot_id     TEXT,
        pid_started INTEGER
    )
"""

_RUN_COLUMNS_V5 = (
    "run_id, started_at, finished_at, status, endpoint, model, scenario, verdict, meta, "
    "diagnosis, notes, kind"
)


def _owners_v6(conn: sqlite3.Connection) -> None:
    """Version 6: the process that keeps each run (its id, host, boot, and start within
    the boot), so a run whose process died is found ``interrupted`` rather than left
    ``running``; and the status ``recorded``, of an application's recording that ended.

    SQLite cannot change a ``CHECK``, so ``runs`` is copied whole into a table that
    allows the new status, every column kept as it was; runs stored before have no
    owner (``NULL``) and are never taken for gone. :func:`migrate` runs this with
    foreign keys off, so dropping the old table leaves the samples in place.
    """
    conn.execute(_RUNS_V6)
    conn.execute(f"INSERT INTO runs_v6 ({_RUN_COLUMNS_V5}) SELECT {_RUN_COLUMNS_V5} FROM runs")
    conn.execute("DROP TABLE runs")
    conn.execute("ALTER TABLE runs_v6 RENAME TO runs")
    conn.execute("CREATE INDEX runs_started_at ON runs (started_at)")


def _run_indexes_v7(conn: sqlite3.Connection) -> None:
    """Version 7: indexes that keep reading runs as quick at the hundred-thousandth run as
    at the first (``latdoc serve``'s list, its filters and its run pages).

    Runs by kind and by endpoint, each in order of start: a page of one kind, the
    endpoints a filter offers, and the diagnosis an experiment followed are read from
    the index, not by scanning every run; and the runs still running, which every open
    of a store and every poll of a live list look for, are an index of their own.
    """
    conn.execute("CREATE INDEX runs_kind ON runs (kind, started_at)")
    conn.execute("CREATE INDEX runs_endpoint ON runs (endpoint, started_at)")
    conn.execute("CREATE INDEX runs_running ON runs (host) WHERE status = 'running'")


MIGRATIONS: tuple[Migration, ...] = (
    _create_v1,
    _loop_lag_v2,
    _notes_and_kinds_v3,
    _summaries_apart_v4,
    _workers_v5,
    _owners_v6,
    _run_indexes_v7,
)
"""``MIGRATIONS[n - 1]`` turns a version ``n - 1`` store into version ``n``."""

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(
    conn: sqlite3.Connection, where: str, migrations: Sequence[Migration] = MIGRATIONS
) -> int:
    """Bring the store on ``conn`` up to ``len(migrations)``; return the version it had.

    ``conn`` must be in autocommit mode (``isolation_level=None``). Raises
    :class:`LatdocError` for a newer schema or a database that is not a latdoc store.
    """
    target = len(migrations)
    if check_version(conn, where, target) == target:
        return target
    # A migration that copies a table drops the old one; with foreign keys on, that
    # would delete the rows that refer to it. The setting cannot change inside a
    # transaction, so it is turned off around it, and checked before the commit.
    keys = int(conn.execute("PRAGMA foreign_keys").fetchone()[0])
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = check_version(conn, where, target)
            for version in range(found + 1, target + 1):
                migrations[version - 1](conn)
                conn.execute(f"PRAGMA user_version = {version:d}")
            if found == 0:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID:d}")
            broken = conn.execute("PRAGMA foreign_key_check").fetchone()
            if broken is not None:
                raise LatdocError(
                    Message(
                        "{where}: migrating broke a reference ({broken})",
                        where=where,
                        broken=broken[0],
                    )
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.execute(f"PRAGMA foreign_keys = {keys:d}")
    return found


def check_version(conn: sqlite3.Connection, where: str, known: int = SCHEMA_VERSION) -> int:
    """The schema version of the store on ``conn``, if this code can use it."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    if app_id not in (0, APPLICATION_ID) or (version == 0 and _has_tables(conn)):
        raise LatdocError(
            Message("{where} is an SQLite database but not a latdoc store", where=where)
        )
    if version > known:
        raise LatdocError(
            Message(
                "{where} has store schema version {version}, newer than this latdoc understands "
                "({known}); upgrade latdoc to read it",
                where=where,
                version=version,
                known=known,
            )
        )
    return version


def _has_tables(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()
    return int(row[0]) > 0
