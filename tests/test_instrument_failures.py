"""latdoc.instrument never breaks the application: a locked store, a store that cannot
be written, and an OpenTelemetry processor that raises cost the application nothing;
what is not recorded is counted with its reason, logged at a bounded rate, and kept in
the run (``latdoc runs``, the diagnosis's notes)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import openai
import pytest

from conftest import FAST, LabFactory
from latdoc import Step, Store, diagnose_traffic, instrument
from latdoc.cli import main
from latdoc.client._instrument import LOG_EVERY, Losses
from latdoc.lab.sim import LabConfig
from latdoc.records import Sample
from latdoc.store._file import BUSY_TIMEOUT_MS
from latdoc.store.writer import QueuedWriter
from report_samples import run_samples


async def _chat(client: openai.AsyncOpenAI, words: int) -> str:
    stream = await client.chat.completions.create(
        model="lab-sim",
        messages=[{"role": "user", "content": "word " * words}],
        max_tokens=6,
        stream=True,
        stream_options={"include_usage": True},
    )
    return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])


def _lock(db: Path) -> sqlite3.Connection:
    """Another process's writer holding the store: every write waits, then fails."""
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    return locker


def test_requests_finish_while_the_store_is_locked_and_are_written_once_it_is_free(
    lab: LabFactory, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=FAST)) as server:

        async def go() -> tuple[str, list[str], float]:
            client = openai.AsyncOpenAI(api_key="sk-x", base_url=server.base_url, max_retries=0)
            with Store(db) as store, instrument(client, store=store) as inst:
                locker = _lock(db)
                started = time.monotonic()
                answers = [await _chat(client, n) for n in (3, 30, 300, 3000)]
                elapsed = time.monotonic() - started
                locker.execute("COMMIT")
                locker.close()
                run_id = inst.run_id
            await client.close()
            return run_id, answers, elapsed

        run_id, answers, elapsed = asyncio.run(go())
    assert all(answers)
    # A request waited for no store: four of them took less than one busy wait.
    assert elapsed < BUSY_TIMEOUT_MS / 1000
    with Store(db) as store:
        info, samples, _ = store.load_run(run_id)
    assert (info.status, len(samples)) == ("recorded", 4)
    assert "not_recorded" not in info.meta


def test_a_store_that_stays_locked_loses_records_not_requests_and_says_so(
    lab: LabFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr("latdoc.store._file.BUSY_TIMEOUT_MS", 50)
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=FAST)) as server:

        async def go() -> tuple[str, int]:
            client = openai.AsyncOpenAI(api_key="sk-x", base_url=server.base_url, max_retries=0)
            with Store(db) as store, instrument(client, store=store) as inst:
                for n in (5, 50):
                    await _chat(client, n)
                inst.flush()
                locker = _lock(db)
                for n in (500, 5, 50, 500, 5):
                    assert await _chat(client, n)
                inst.flush()  # the writer tries each batch three times, then gives it up
                locker.execute("COMMIT")
                locker.close()
                lost = inst.not_recorded
                run_id = inst.run_id
            await client.close()
            return run_id, lost

        with caplog.at_level(logging.WARNING, logger="latdoc.instrument"):
            run_id, lost = asyncio.run(go())
    assert lost == 5
    warnings = [r.getMessage() for r in caplog.records if r.name == "latdoc.instrument"]
    assert warnings and all("not recorded: database is locked" in w for w in warnings)
    assert len(warnings) <= 2  # one line a reason, not one a request
    with Store(db) as store:
        info, samples, _ = store.load_run(run_id)
        assert (info.status, len(samples)) == ("recorded", 2)
        assert info.meta["not_recorded"]["reasons"] == {"database is locked": 5}
        run = diagnose_traffic(store, run_id)
    notes = [n.text for n in run.diagnosis.notes]
    assert "5 requests not recorded: database is locked" in notes

    assert main(["runs", "--db", str(db)]) == 0


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


_APP_WITH_A_BROKEN_PROCESSOR = textwrap.dedent(
    """
    import asyncio, json, sys
    import openai
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanProcessor
    from latdoc import Store, instrument

    class Broken(SpanProcessor):
        def on_end(self, span):
            raise RuntimeError("exporter is down")

    provider = TracerProvider()
    provider.add_span_processor(Broken())
    trace.set_tracer_provider(provider)

    async def go():
        client = openai.AsyncOpenAI(api_key="sk-x", base_url=sys.argv[1], max_retries=0)
        answers = []
        with Store(sys.argv[2]) as store, instrument(client, store=store, otel=True) as inst:
            for n in (4, 40, 400):
                stream = await client.chat.completions.create(
                    model="lab-sim", messages=[{"role": "user", "content": "word " * n}],
                    max_tokens=6, stream=True)
                answers.append("".join(
                    [c.choices[0].delta.content or "" async for c in stream if c.choices]))
            run_id, unreported = inst.run_id, inst.unreported.total
        await client.close()
        print(json.dumps({"answers": answers, "run": run_id, "unreported": unreported}))

    asyncio.run(go())
    """
)


def test_an_opentelemetry_processor_that_raises_never_reaches_the_application(
    lab: LabFactory, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    script = tmp_path / "app.py"
    script.write_text(_APP_WITH_A_BROKEN_PROCESSOR)
    with lab(LabConfig(latency=FAST)) as server:
        done = subprocess.run(
            [sys.executable, str(script), server.base_url, str(db)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
            check=False,
        )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert len(out["answers"]) == 3 and all(out["answers"])
    assert out["unreported"] == 3
    assert "not reported to OpenTelemetry: exporter is down" in done.stderr
    with Store(db) as store:
        info, samples, _ = store.load_run(out["run"])
    assert len(samples) == 3 and all(s.step is Step.TRAFFIC for s in samples)
    assert info.meta["not_reported"]["reasons"] == {"exporter is down": 3}


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
