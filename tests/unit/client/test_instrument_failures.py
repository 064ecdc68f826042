"""latdoc.instrument never breaks the application: a locked store, a store that cannot
be written, and an OpenTelemetry processor that raises cost the application nothing;
what is not recorded is counted with its reason, logged at a bounded rate, and kept in
the run (``latdoc runs``, the diagnosis's notes)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from latdoc import Store
from latdoc.cli import main
from latdoc.client._instrument import LOG_EVERY, Losses
from latdoc.records import Sample
from latdoc.store.writer import QueuedWriter
from report_samples import run_samples


def test_latdoc_runs_shows_what_a_recording_did_not_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        run_id = store.new_run(
            endpoint="http://127.0.0.1:1/v1", model="m", scenario="chat", meta={}, kind="instrument"
        )
        losses = Losses("not recorded")
        losses.add(3, "database or disk is full")
        store.update_meta(run_id, {"not_recorded": losses.document()})
        store.finish_run(run_id, status="recorded", diagnosis=None, notes=losses.notes())
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert run_id in out
    assert "3 requests not recorded: database or disk is full" in out


def test_losses_are_logged_once_a_reason_then_at_most_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    losses = Losses("not recorded", clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="latdoc.instrument"):
        for _ in range(100):
            losses.add(1, "database is locked")
            now[0] += 0.1
        losses.add(1, "disk I/O error")
        now[0] = LOG_EVERY + 1
        losses.add(1, "database is locked")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "latdoc: 1 request not recorded: database is locked",
        "latdoc: 1 request not recorded: disk I/O error",
        "latdoc: 100 requests not recorded: database is locked",
    ]
    assert losses.total == 102
    assert losses.document()["reasons"] == {"database is locked": 101, "disk I/O error": 1}


def _samples(n: int) -> list[Sample]:
    samples = run_samples()
    assert len(samples) >= n
    return samples[:n]


class _StuckStore:
    """A store whose writes wait for ``free`` (a disk that does not answer)."""

    def __init__(self) -> None:
        self.free = threading.Event()
        self.written: list[Sample] = []

    def add_samples(self, run_id: str, samples: Sequence[Sample]) -> None:
        self.free.wait(30)
        self.written += samples


def test_the_write_queue_is_bounded_and_accounts_for_every_sample() -> None:
    stuck, opened = _StuckStore(), threading.Event()

    def connect() -> _StuckStore:
        opened.wait(30)  # the thread takes nothing before the test lets it
        return stuck

    lost: list[tuple[int, str]] = []
    writer = QueuedWriter(connect, "run", lambda n, why: lost.append((n, why)), limit=3)
    samples = _samples(7)
    started = time.monotonic()
    for sample in samples[:6]:
        writer.put(sample)  # three wait for the thread; the rest are dropped at once
    assert time.monotonic() - started < 1.0
    assert lost == [(1, "the store fell behind and its write queue was full")] * 3
    opened.set()
    deadline = time.monotonic() + 10
    while writer._queue.qsize() and time.monotonic() < deadline:
        time.sleep(0.01)  # the thread takes the three, and waits on the store
    writer.put(samples[6])
    writer.close(timeout=0.3)  # the store does not answer: the queued one is lost
    assert lost[3:] == [(1, "the store was still busy when the recording closed")]
    stuck.free.set()  # the batch the thread held is written when the store answers
    writer._thread.join(5.0)
    assert stuck.written == samples[:3]


def test_the_write_queue_writes_everything_it_was_given_when_the_store_answers() -> None:
    stuck = _StuckStore()
    stuck.free.set()
    lost: list[tuple[int, str]] = []
    writer = QueuedWriter(lambda: stuck, "run", lambda n, why: lost.append((n, why)))
    samples = _samples(6)
    for sample in samples:
        writer.put(sample)
    assert writer.flush(timeout=5.0)
    writer.close(timeout=5.0)
    assert (stuck.written, lost, writer.committed) == (samples, [], len(samples))
