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
import time
from pathlib import Path

import openai
import pytest

from conftest import FAST, LabFactory
from latdoc import Step, Store, diagnose_traffic, instrument
from latdoc.cli import main
from latdoc.lab.sim import LabConfig
from latdoc.store import BUSY_TIMEOUT_MS


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
    lab: LabFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=FAST)) as server:

        async def go() -> tuple[str, int]:
            client = openai.AsyncOpenAI(api_key="sk-x", base_url=server.base_url, max_retries=0)
            with Store(db, busy_timeout_ms=50) as store, instrument(client, store=store) as inst:
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
