"""Shared fixtures: the simulated endpoint on loopback, started per test on port 0."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import tempfile
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import settings

import alone
import durations
from latdoc.lab.sim import LabConfig, LabServer, LatencyModel
from machine_noise import MachineNoise
from paths import TESTS

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # Started in the background of a shell without job control (`pytest &`, nohup, some
    # CI runners), the suite inherits SIGINT ignored, and so would every command a test
    # starts: its Ctrl-C would do nothing. A handler, unlike an ignored signal, is not
    # inherited across exec, so the commands start with Python's own.
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Hypothesis fails an example that takes longer than 200 ms by default: a timing
# assertion on a machine the suite shares (a record's round trip through the store took
# longer beside a CPU hog). What its tests check is behaviour, never time, so no example
# has a deadline.
settings.register_profile("latdoc", deadline=None)
settings.load_profile("latdoc")

FAST = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.01, decode_ms_per_token=1.0)
"""A quick endpoint for tests that check behaviour, not timing."""

LabFactory = Callable[..., AbstractContextManager[LabServer]]


def pytest_configure(config: pytest.Config) -> None:
    # The tests hold latdoc's English words: a developer's Chinese locale (or LATDOC_LANG)
    # does not change what the commands they start print; a test of Chinese asks for it.
    os.environ["LATDOC_LANG"] = "en"
    if not hasattr(config, "workerinput"):
        # The controller: the workers it starts inherit the lock directory (:mod:`alone`).
        os.environ[alone.ENV] = tempfile.mkdtemp(prefix="latdoc-tests-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        shutil.rmtree(os.environ.pop(alone.ENV, ""), ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files in order of their running time, longest first (:mod:`durations`); the
    tests of a file keep their order."""
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.path.relative_to(TESTS).as_posix(), []).append(item)
    order = durations.longest_first(list(by_file), durations.load())
    items[:] = [item for name in order for item in by_file[name]]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """On several workers, a test marked ``alone`` runs while the other workers wait
    (:mod:`alone`)."""
    if not hasattr(item.config, "workerinput"):
        return (yield)
    marked = item.get_closest_marker(alone.MARK) is not None
    with alone.held(Path(os.environ[alone.ENV]), alone=marked):
        return (yield)


@pytest.fixture(autouse=True)
def private_store(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test (and every command it starts) keeps its runs in a store of its own,
    never in the user's."""
    monkeypatch.setenv("LATDOC_DB", str(tmp_path_factory.mktemp("store") / "latdoc.db"))


@pytest.fixture
def machine_noise() -> MachineNoise:
    """This machine's scheduling noise, measured as the test starts (and again whenever
    the test asks), for a timing test to widen its tolerance by."""
    return MachineNoise()


@pytest.fixture
def lab() -> LabFactory:
    """``with lab(config, tls=..., http2=...) as server:`` a real server on loopback."""

    @contextmanager
    def start(
        config: LabConfig | None = None, *, tls: bool = False, http2: bool = False
    ) -> Iterator[LabServer]:
        with LabServer(config or LabConfig(latency=FAST), tls=tls, http2=http2) as server:
            yield server

    return start


def micros_since_epoch(at: datetime) -> int:
    """``at`` in whole microseconds since the epoch, in integers (a float timestamp near
    2026 rounds to a quarter of a microsecond)."""
    return (at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def closed_port() -> int:
    """A loopback port nothing listens on (bound for a moment, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stored_samples(db: Path, concurrency: int | None = None) -> int:
    """Samples a running command has stored so far (of one concurrency level, if named);
    0 before the file exists, and while it exists before its tables do."""
    if not db.exists():
        return 0
    query, params = "SELECT count(*) FROM samples", ()
    if concurrency is not None:
        query, params = query + " WHERE concurrency = ?", (concurrency,)
    with sqlite3.connect(db) as conn:
        try:
            return int(conn.execute(query, params).fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def wait_for_samples(
    db: Path, at_least: int, seconds: float, concurrency: int | None = None
) -> int:
    """Poll :func:`stored_samples` until ``at_least`` are stored or ``seconds`` pass;
    the last count."""
    deadline = time.monotonic() + seconds
    stored = stored_samples(db, concurrency)
    while stored < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
        stored = stored_samples(db, concurrency)
    return stored
