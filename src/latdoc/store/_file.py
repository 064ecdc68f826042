"""Where the store's file is, and how it is opened: the connection's settings, the
schema checked and brought up to date."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from latdoc.errors import StoreUnusable
from latdoc.i18n import Message
from latdoc.store.schema import SCHEMA_VERSION, check_version, migrate

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system: SQLite's busy handler alone
    fcntl = None  # type: ignore[assignment]

BUSY_TIMEOUT_MS = 30_000
"""How long a statement waits for a lock another connection holds: a commit stalled on a
slow disk, a long prune or import, before "database is locked"."""
TURN_WAIT_S = 60.0
"""How long a writer waits for its turn (:class:`WriteTurns`) before it goes to SQLite's
lock unqueued."""
PAGE_SIZE = 16384
MEMORY = ":memory:"


def default_path() -> Path:
    """``$LATDOC_DB``, else ``$XDG_DATA_HOME/latdoc/latdoc.db``, else
    ``~/.local/share/latdoc/latdoc.db``; its directory is created."""
    override = os.environ.get("LATDOC_DB")
    if override:
        path = Path(override).expanduser()
    else:
        data_home = os.environ.get("XDG_DATA_HOME", "")
        base = Path(data_home) if os.path.isabs(data_home) else Path.home() / ".local" / "share"
        path = base / "latdoc" / "latdoc.db"
    if str(path) != MEMORY:
        path.parent.mkdir(parents=True, exist_ok=True)
    return path


def open_store(path: str, busy_timeout_ms: int, *, read_only: bool = False) -> sqlite3.Connection:
    """A connection to the store at ``path`` (created if new), at the current schema, whose
    statements wait ``busy_timeout_ms`` for a lock another connection holds.

    ``read_only`` opens an existing store that this connection can never write (SQLite's
    ``mode=ro``): nothing is created, migrated or set; a store of an older schema is
    refused with the command that brings it up to date, since reading it as it is would
    need every older query kept."""
    if read_only:
        return _open_read_only(path, busy_timeout_ms)
    if path != MEMORY:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreUnusable(
            Message("cannot open the latdoc store {path}: {exc}", path=path, exc=exc)
        ) from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms:d}")
        check_version(conn, path)
        # A trace record is about 2 KB: on 4 KB pages a third of the file would be
        # the unused ends of pages. Only a new file takes the size; others keep theirs.
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE:d}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA journal_mode = WAL")
        migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreUnusable(
            Message("cannot use {path} as a latdoc store: {exc}", path=path, exc=exc)
        ) from None
    except BaseException:
        conn.close()
        raise
    return conn


def _open_read_only(path: str, busy_timeout_ms: int) -> sqlite3.Connection:
    if path == MEMORY or not Path(path).is_file():
        raise StoreUnusable(Message("no latdoc store at {path}", path=path))
    try:
        conn = sqlite3.connect(
            f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, isolation_level=None,
            check_same_thread=False,
        )  # fmt: skip
    except sqlite3.Error as exc:
        raise StoreUnusable(
            Message("cannot open the latdoc store {path}: {error}", path=path, error=str(exc))
        ) from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms:d}")
        version = check_version(conn, path)
        if version < SCHEMA_VERSION:
            raise StoreUnusable(
                Message(
                    "{path} has store schema version {version}, older than this latdoc's "
                    "({current}); any command that writes it brings it up to date "
                    "(`latdoc runs --db {path}`)",
                    path=path, version=version, current=SCHEMA_VERSION,
                )
            )  # fmt: skip
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreUnusable(
            Message("cannot use {path} as a latdoc store: {error}", path=path, error=str(exc))
        ) from None
    except BaseException:
        conn.close()
        raise
    return conn


class WriteTurns:
    """Turns at a store's write lock among the processes (and stores) that share it.

    SQLite's busy handler polls: a connection waiting for the write lock sleeps up to
    100 ms between tries. A writer that commits back to back (a load sweep keeping each
    trace as it finishes, a batch of thousands) takes the lock again in the gap, and a
    waiting ``watch`` or ``diagnose`` can miss every gap for longer than the busy timeout:
    "database is locked". So a writer first takes its turn, an exclusive ``flock`` on
    the file beside the store (``<store>-turn``), and holds it only while it waits for
    SQLite's lock: a writer that comes back meanwhile waits for the turn, and the one
    holding it is next. Without the file (a read-only directory, ``:memory:``) the busy
    handler is all there is.
    """

    def __init__(self, path: str) -> None:
        self._fd: int | None = None
        if path != MEMORY and fcntl is not None:
            try:
                self._fd = os.open(f"{path}-turn", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError:
                self._fd = None

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Hold the turn for the block (a write transaction's ``BEGIN``)."""
        took = self._take()
        try:
            yield
        finally:
            if took and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _take(self) -> bool:
        if self._fd is None:
            return False
        deadline = time.monotonic() + TURN_WAIT_S
        delay = 0.0002
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                # Whoever holds it waits for SQLite's lock and lets go once it has it: a
                # short wait, polled finely (a blocking flock could not be given up).
                if time.monotonic() >= deadline:
                    return False
                time.sleep(delay)
                delay = min(2 * delay, 0.002)
            except OSError:
                return False

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
