"""Where the store's file is, and how it is opened: the connection's settings, the
schema checked and brought up to date."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from latdoc.errors import UsageError
from latdoc.store.schema import check_version, migrate

BUSY_TIMEOUT_MS = 5000
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


def open_store(path: str) -> sqlite3.Connection:
    """A connection to the store at ``path`` (created if new), at the current schema."""
    if path != MEMORY:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise UsageError(f"cannot open the latdoc store {path}: {exc}") from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
        check_version(conn, path)
        # A trace record is about 2 KB: on 4 KB pages a third of the file would be
        # the unused ends of pages. Only a new file takes the size; others keep theirs.
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE:d}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA journal_mode = WAL")
        migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise UsageError(f"cannot use {path} as a latdoc store: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn
