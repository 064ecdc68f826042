"""``latdoc load --processes N``: one sweep sent from worker processes, merged into one run.

The lab runs in a process of its own with 8 slots; a request takes about
20 ms + 15 × 10 ms. The workers are real spawned processes sending over loopback.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import wait_for_samples
from latdoc import (
    LoadRun,
    Store,
    Workers,
    load_endpoint,
    reload_load,
)
from latdoc.cli import main
from latdoc.features.load import LevelWindow
from latdoc.features.load.send.fleet import estimate_offset
from latdoc.features.load.send.workers import worker_clocks
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from unit.features.load.test_load_workers import OUTPUT, _plan

LATENCY = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=10.0)


SLOW = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=150.0)


"""A request of 16 tokens takes about 2.3 s: long enough to be caught in flight."""


@pytest.fixture(scope="module")
def lab_url() -> Iterator[str]:
    with LabProcess(LabConfig(slots=8, latency=LATENCY, seed=5)) as server:
        yield server.base_url


@pytest.fixture(scope="module")
def closed(lab_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[LoadRun, Path]:
    db = tmp_path_factory.mktemp("workers") / "closed.db"
    with Store(db) as store:
        run = load_endpoint(_plan(lab_url, concurrency=(1, 4)), store=store, workers=Workers(2))
    return run, db


def test_levels_are_split_and_every_trace_lands_in_one_run_with_its_worker(
    closed: tuple[LoadRun, Path],
) -> None:
    run, db = closed
    assert run.status == "done"
    assert [lv.window.label for lv in run.analysis.levels] == ["1", "4"]
    one, four = run.analysis.levels
    # Level 1 is one stream, so one worker sends it; level 4 is two streams each.
    level_one = {s.worker for s in run.samples if s.concurrency == 1}
    level_four = {s.worker for s in run.samples if s.concurrency == 4}
    assert len(level_one) == 1 and level_four == {0, 1}
    assert four.requests_per_s > 3 * one.requests_per_s
    assert sorted(s.index for s in run.samples) == list(range(len(run.samples)))
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT worker, count(*) FROM samples GROUP BY worker").fetchall()
    conn.close()
    assert {w for w, _ in rows} == {0, 1}
    assert sum(n for _, n in rows) == len(run.samples)


def test_merged_timelines_fall_inside_their_levels(closed: tuple[LoadRun, Path]) -> None:
    run, _ = closed
    for lv in run.analysis.levels:
        w = lv.window
        mine = [s.trace for s in run.samples if s.concurrency == w.concurrency]
        assert mine and all(w.start_ns - 1_000_000 <= t.t0_ns <= w.end_ns for t in mine)
        assert lv.little is not None and lv.little.in_flight == pytest.approx(
            w.concurrency, rel=0.15
        )
    starts = sorted(s.trace.started_ns or 0 for s in run.samples)
    assert starts[-1] - starts[0] < 10 * 1_000_000_000


def test_each_workers_clock_offset_is_estimated_and_recorded(
    closed: tuple[LoadRun, Path],
) -> None:
    run, db = closed
    with Store(db) as store:
        info = store.run_info(run.run_id)
        again = reload_load(store, run.run_id)
    workers = info.meta["workers"]
    assert (workers["backend"], workers["count"]) == ("processes", 2)
    for member in workers["members"]:
        offset = member["clock_offset"]
        assert member["pid"] != os.getpid()
        # One host, one monotonic clock: the true offset is 0, and the estimate says so
        # within its own uncertainty; none is applied.
        assert 0 < offset["uncertainty_ns"] < 50_000_000
        assert abs(offset["monotonic_ns"]) <= offset["uncertainty_ns"]
        assert offset["applied_monotonic_ns"] == 0
    assert [s.worker for s in again.samples] == [s.worker for s in run.samples]
    assert any(
        n.text.startswith("sent from 2 worker processes on ") and "no offset was applied" in n.text
        for n in run.notes
    )


class _AheadClock:
    """A worker on a host whose clocks run ahead of this one's, 2 ms away each way."""

    worker = 0
    monotonic_ahead = 3_600 * 10**9
    wall_ahead = -250 * 10**6

    async def clock(self) -> tuple[int, int]:
        await asyncio.sleep(0.002)
        mono, wall = worker_clocks()
        await asyncio.sleep(0.002)
        return mono + self.monotonic_ahead, wall + self.wall_ahead


def test_another_hosts_clocks_are_estimated_within_their_uncertainty_and_undone(
    closed: tuple[LoadRun, Path],
) -> None:
    ahead = _AheadClock()
    offset = asyncio.run(estimate_offset(ahead, same_clock=False))  # type: ignore[arg-type]
    assert 2_000_000 <= offset.uncertainty_ns < 50_000_000
    assert abs(offset.monotonic_ns - ahead.monotonic_ahead) <= offset.uncertainty_ns
    assert abs(offset.wall_ns - ahead.wall_ahead) <= offset.uncertainty_ns
    assert (offset.applied_monotonic_ns, offset.applied_wall_ns) == (
        offset.monotonic_ns, offset.wall_ns
    )  # fmt: skip
    # A sample and a level as that worker saw them come back onto this host's clocks.
    run, _ = closed
    here = run.samples[0]
    there = dataclasses.replace(
        here,
        trace=dataclasses.replace(
            here.trace,
            t0_ns=here.trace.t0_ns + ahead.monotonic_ahead,
            started_ns=(here.trace.started_ns or 0) + ahead.wall_ahead,
            started_at=here.trace.started_at + timedelta(microseconds=ahead.wall_ahead / 1000),
        ),
    )
    back = offset.to_driver(there).trace
    assert abs(back.t0_ns - here.trace.t0_ns) <= offset.uncertainty_ns
    assert abs((back.started_ns or 0) - (here.trace.started_ns or 0)) <= offset.uncertainty_ns
    assert abs(back.started_at - here.trace.started_at) <= timedelta(
        microseconds=offset.uncertainty_ns / 1000 + 1
    )
    window = LevelWindow(
        1, 4, None, 10**9 + ahead.monotonic_ahead, 2 * 10**9 + ahead.monotonic_ahead
    )
    moved = offset.window(window)
    assert abs(moved.start_ns - 10**9) <= offset.uncertainty_ns
    assert moved.end_ns - moved.start_ns == 10**9
    same = asyncio.run(estimate_offset(ahead, same_clock=True))  # type: ignore[arg-type]
    assert (same.applied_monotonic_ns, same.applied_wall_ns) == (0, 0)


def test_open_loop_rates_add_up_over_the_workers(lab_url: str, tmp_path: Path) -> None:
    with Store(tmp_path / "open.db") as store:
        run = load_endpoint(
            _plan(lab_url, rates=(20.0,), duration_per_level=2.0), store=store, workers=Workers(2)
        )
    (lv,) = run.analysis.levels
    assert lv.window.rate == 20.0 and lv.window.scheduled is not None
    assert 20 <= lv.window.scheduled <= 60
    assert lv.sent_per_s == pytest.approx(20.0, rel=0.5)
    assert {s.worker for s in run.samples} == {0, 1}
    assert lv.sustained


def test_a_dead_worker_loses_only_its_in_flight_requests_and_says_how_many(
    tmp_path: Path,
) -> None:
    found: list[str] = []
    db = tmp_path / "d.db"

    def kill_worker_one() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not _has_run(db):
            time.sleep(0.05)
        time.sleep(1.0)  # the level has started: its two requests are out, none is back
        for child in multiprocessing.active_children():
            if child.name == "latdoc-load-worker-1" and child.pid is not None:
                os.kill(child.pid, signal.SIGKILL)
                found.append(child.name)

    with LabProcess(LabConfig(slots=8, latency=SLOW)) as server, Store(db) as store:
        killer = threading.Thread(target=kill_worker_one)
        killer.start()
        run = load_endpoint(
            # Both streams of each worker send at once (no spread start): two in flight.
            replace(
                _plan(server.base_url, concurrency=(4,), duration_per_level=2.5), burst_start=True
            ),
            store=store,
            workers=Workers(2),
        )
        killer.join()
    assert found
    lost = [n.text for n in run.notes if "was lost" in n.text]
    assert len(lost) == 1
    assert lost[0].startswith("worker 1 (pid ")
    assert "2 requests it had started were lost in flight" in lost[0]
    assert {s.worker for s in run.samples} == {0}
    assert run.samples and all(s.trace.ok for s in run.samples)
    (level,) = run.analysis.levels
    assert level.window.partial  # it did not hold its load: no knee or plateau from it


def _has_run(db: Path) -> bool:
    if not db.exists():
        return False
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute("SELECT count(*) FROM runs").fetchone()[0] > 0
        except sqlite3.OperationalError:
            return False


def test_ctrl_c_stops_every_worker_process(lab_url: str, tmp_path: Path) -> None:
    db = tmp_path / "int.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "latdoc", "load", lab_url, "-m", "lab-sim", "--db", str(db),
         "--max-tokens", str(OUTPUT), "--concurrency", "4", "--duration-per-level", "20",
         "--processes", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    stored = wait_for_samples(db, 4, 30)
    assert stored >= 4, "the run did not store traces in time"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    said = " ".join(out.split())
    assert "interrupted by the user" in said and "Traceback" not in err
    assert "Note: sent from 2 worker processes on " in said
    with sqlite3.connect(db) as conn:
        status, meta = conn.execute("SELECT status, meta FROM runs").fetchone()
    assert status == "interrupted"
    pids = [m["pid"] for m in json.loads(meta)["workers"]["members"]]
    assert len(pids) == 2 and not any(Path(f"/proc/{pid}").exists() for pid in pids)


def test_flags_that_do_not_fit_are_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["load", "--workers", "3", "--concurrency", "1"]) == 2
    assert capsys.readouterr().err.startswith("Error: --workers counts Ray actors")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the [ray] extra were missing
    assert main(["load", "--ray", "auto", "--concurrency", "1", "--max-seconds", "5"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'llm-latency-doctor[ray]'" in err and "Traceback" not in err


def test_importing_latdoc_never_imports_ray() -> None:
    code = (
        "import sys, latdoc, latdoc.cli, latdoc.pipeline, latdoc.workload, latdoc.lab; "
        "assert 'ray' not in sys.modules, 'ray was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_level_the_time_budget_shortens_says_so_as_a_local_load_does(
    lab_url: str, tmp_path: Path
) -> None:
    plan = _plan(lab_url, concurrency=(2,), duration_per_level=30.0, max_seconds=1.0)
    with Store(tmp_path / "cut.db") as store:
        run = load_endpoint(plan, store=store, workers=Workers(2))
    assert any(n.text.startswith("level 2 cut to 1.0 s by the time budget") for n in run.notes), [
        n.text for n in run.notes
    ]
    assert run.samples
