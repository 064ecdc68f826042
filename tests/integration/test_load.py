"""``latdoc load`` against the lab: the knee, the plateau, Little's law, goodput, open loop.

The lab serves 4 requests at once (``slots=4``) at 20 ms of prefill and 10 ms a
token, so a 16-token answer takes about 170 ms and the server's capacity is about
4 / 0.17 s ≈ 23 requests/s. It runs in its own process so that client and server
do not share an interpreter lock and the timing is real.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import LabFactory, wait_for_samples
from latdoc import (
    Endpoint,
    LoadPlan,
    LoadRun,
    Slo,
    Step,
    Store,
    load_endpoint,
    reload_load,
    render_load,
    render_text,
)
from latdoc.analysis.servertime import server_timing_of
from latdoc.cli import main
from latdoc.features.load.analysis import (
    LITTLE_TOLERANCE,
    LevelStats,
    find_knee,
    findings,
    knee_base,
)
from latdoc.lab.sim import Fault, LabConfig, LabProcess, LatencyModel
from machine_noise import HeldBack, MachineNoise, held_back

SLOTS = 4


LATENCY = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=10.0)


OUTPUT = 16


SERVICE_S = (20.0 + 10.0 * (OUTPUT - 1)) / 1000


"""One request's time on a free slot, as the lab plans it."""
SWEEP_LEVEL_S = 2.0
"""Each level's duration, unless a test asks for another."""


@pytest.fixture(scope="module")
def slotted_lab() -> Iterator[LabProcess]:
    with LabProcess(LabConfig(slots=SLOTS, latency=LATENCY, seed=3)) as server:
        yield server


@pytest.fixture(scope="module")
def slotted(slotted_lab: LabProcess) -> str:
    return slotted_lab.base_url


def _plan(base_url: str, **options: object) -> LoadPlan:
    defaults: dict[str, object] = {
        "max_tokens": OUTPUT,
        "duration_per_level": SWEEP_LEVEL_S,
        "max_seconds": 60.0,
        "seed": 7,
    }
    return LoadPlan(Endpoint(base_url, "lab-sim"), **{**defaults, **options})  # type: ignore[arg-type]


def _level(run: LoadRun, label: str) -> LevelStats:
    return next(lv for lv in run.analysis.levels if lv.window.label == label)


@pytest.fixture(scope="module")
def measured_sweep(
    slotted_lab: LabProcess, tmp_path_factory: pytest.TempPathFactory
) -> tuple[LoadRun, Path, HeldBack]:
    """The sweep, and what held its client and its lab back while it ran."""
    db = tmp_path_factory.mktemp("load") / "sweep.db"
    assert slotted_lab.pid is not None
    with Store(db) as store, held_back(slotted_lab.pid) as held:
        run = load_endpoint(
            _plan(slotted_lab.base_url, concurrency=(1, 2, 4, 8, 16)),
            store=store,
            slo=Slo(ttft_ms=100.0, tpot_ms=50.0),
        )
    return run, db, held


@pytest.fixture(scope="module")
def sweep(measured_sweep: tuple[LoadRun, Path, HeldBack]) -> tuple[LoadRun, Path]:
    run, db, _ = measured_sweep
    return run, db


def test_closed_loop_finds_the_knee_above_the_slots(sweep: tuple[LoadRun, Path]) -> None:
    run, _ = sweep
    a = run.analysis
    assert run.status == "done"
    assert [lv.window.label for lv in a.levels] == ["1", "2", "4", "8", "16"]
    assert all(lv.failed == 0 for lv in a.levels)
    assert a.knee is not None and a.knee.window.label == "8"
    # Below the slots nobody waits: TTFT stays at the prefill.
    for label in ("1", "2", "4"):
        ttft = _level(run, label).ttft_ms
        assert ttft is not None and ttft.p50 < 60
    # Samples keep their level, so a comparison keeps levels apart.
    assert {s.concurrency for s in run.samples if s.step == Step.LOAD} == {1, 2, 4, 8, 16}


def test_the_knee_sentence_reads_the_rules_own_reference(sweep: tuple[LoadRun, Path]) -> None:
    """A lowest level cut short is not the knee's reference; its sentence read it anyway,
    so the ratio it printed was not the one the rule tested."""
    run, _ = sweep
    a = run.analysis
    first = a.levels[0]
    levels = (replace(first, window=replace(first.window, partial=True)), *a.levels[1:])
    cut = replace(a, levels=levels, knee=find_knee(levels))
    reference = knee_base(levels)
    assert reference is not None and reference[0] is levels[1]
    text = " ".join(findings(cut))
    assert f"at {levels[1].window.label} " in text, text
    assert "lowest level" not in text


def test_closed_loop_throughput_plateaus_at_the_slots(
    measured_sweep: tuple[LoadRun, Path, HeldBack], machine_noise: MachineNoise
) -> None:
    run, _, held = measured_sweep
    a = run.analysis
    capacity = SLOTS / SERVICE_S
    # Past 8 streams (a queue at every slot) more streams buy no more work. At 4 the
    # slots are full only while the client turns each answer round at once; on a busy
    # machine that turnaround leaves a slot idle, so 8 may still gain the 10 % that makes
    # a plateau over 4, and the plateau (the first level that gains less) is then 16.
    assert a.plateau is not None and a.plateau.window.label in ("8", "16"), a.plateau
    eight, sixteen = (_level(run, label).requests_per_s for label in ("8", "16"))
    # A busy machine adds its noise to every request's time (never more than a whole
    # service): the lower bounds allow it; a server that did not use its slots would
    # still fall short of them by half.
    slower_s = machine_noise.bound_ms(0.0, SERVICE_S * 1000) / 1000
    # Sixteen streams gain less than a tenth over eight, beyond what that noise, or the
    # eight's own event loop running late (the level's p99, its own account), can have
    # cost the eight's turnarounds (a burst of the other worker's load while the eight
    # ran left a slot idle: 18.6/s, then 21.0/s at sixteen). Capped at half a service,
    # so sixteen doing twice the work of eight, no plateau at all, still fails.
    turnaround_s = min(max(slower_s, _loop_lag_s(_level(run, "8"))), SERVICE_S / 2)
    assert sixteen < 1.1 * eight * (SERVICE_S + turnaround_s) / SERVICE_S, (eight, sixteen)
    # A level's requests lose at most the time its client or lab was held back, and no
    # level more than the whole sweep's (its own account of both processes' wait for a
    # core): beside a calibration run the first level's 2 s served 4.1 requests a second
    # where an unhindered one serves 5.9.
    kept = max(0.0, 1 - held.ms / 1000 / SWEEP_LEVEL_S)
    assert a.peak_requests_per_s is not None
    assert 0.75 * kept * SLOTS / (SERVICE_S + slower_s) <= a.peak_requests_per_s
    assert a.peak_requests_per_s <= 1.1 * capacity
    one = _level(run, "1").requests_per_s
    assert 0.75 * kept / (SERVICE_S + slower_s) <= one <= 1.1 / SERVICE_S, held


def _loop_lag_s(lv: LevelStats) -> float:
    """How late the level's event loop woke, by its own account (p99), in seconds."""
    client = lv.window.client
    return (
        0.0 if client is None or client.loop_lag_ms_p99 is None else client.loop_lag_ms_p99 / 1000
    )


def _turnaround_share(lv: LevelStats) -> float:
    """The most of each stream's time its client can have spent turning an answer into
    the next request, by the level's own account of its event loop's lateness (p99):
    on a busy machine a stream sits idle that long between its requests."""
    lag_s = _loop_lag_s(lv)
    return lag_s / (SERVICE_S + lag_s)


def test_littles_law_holds_at_every_level(sweep: tuple[LoadRun, Path]) -> None:
    run, _ = sweep
    for lv in run.analysis.levels:
        assert lv.little is not None
        # A closed loop holds its streams: the measured in-flight is the level, less
        # what the client's own turnarounds left idle (the product says so when they do).
        assert lv.window.concurrency is not None
        idle = _turnaround_share(lv)
        assert lv.little.in_flight <= lv.window.concurrency * 1.001
        assert lv.little.in_flight >= lv.window.concurrency * (1 - LITTLE_TOLERANCE - idle), (
            lv.window.label,
            lv.little,
            idle,
        )
        assert lv.little.error <= LITTLE_TOLERANCE + idle, (lv.window.label, lv.little, idle)


def test_goodput_counts_requests_meeting_every_slo(sweep: tuple[LoadRun, Path]) -> None:
    run, _ = sweep
    # At 4 streams nobody waits for a slot, by the lab's own account (Server-Timing): a
    # request that missed the SLO there was held by the machine, not the server (beside a
    # CPU hog 1 of 38 took five times its 20 ms TTFT; beside two other busy workers, 8 of
    # 43). Every request the server served within the SLO and the machine did not hold
    # up counts as goodput.
    level = _level(run, "4")
    four = level.goodput_share
    at_four = [
        s.trace for s in run.samples if s.step == Step.LOAD and s.concurrency == 4 and s.trace.ok
    ]
    told = [server_timing_of(t) for t in at_four]
    assert at_four and all(t is not None and t.queue_ms is not None for t in told)
    # A slot wait would be a whole answer (~170 ms); a slot freed a moment after the
    # stream's last event is not one.
    assert max(t.queue_ms or 0.0 for t in told if t is not None) < 50.0, "no slot wait at 4"
    on_time = [t for t in at_four if (t.ttft_ms or 0.0) <= 100.0 and (t.tpot_ms or 0.0) <= 50.0]
    assert four is not None and four == pytest.approx(len(on_time) / len(at_four), abs=0.05)
    # At 16 streams, three quarters wait a whole request for a slot: past 100 ms.
    sixteen = _level(run, "16")
    assert sixteen.goodput_share is not None and sixteen.goodput_share < 0.4
    assert sixteen.goodput_per_s is not None
    assert sixteen.goodput_per_s < sixteen.requests_per_s


def test_pool_wait_is_measured_apart_from_the_server(sweep: tuple[LoadRun, Path]) -> None:
    run, _ = sweep
    sixteen = _level(run, "16")
    assert sixteen.pool_wait_ms is not None and sixteen.ttft_ms is not None
    # The server's queue shows in TTFT, not in the client's pool: sized to the level.
    assert sixteen.pool_wait_ms.p50 < 0.1 * sixteen.ttft_ms.p50


def test_terminal_table_fits_80_columns(sweep: tuple[LoadRun, Path]) -> None:
    run, _ = sweep
    text = render_text(render_load(run.analysis, run.notes, title="lab under load"))
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    assert "Knee at 8" in text
    assert run.analysis.plateau is not None
    assert f"Throughput plateau at {run.analysis.plateau.window.label}" in text
    off = [lv for lv in run.analysis.levels if lv.little is not None and not lv.little.holds]
    if not off:
        assert "Little's law holds" in text
    for lv in off:  # a client held back below its streams says so, level by level
        assert f"Little's law is {lv.little.error:.0%} off at" in text  # type: ignore[union-attr]
    assert "Goodput (TTFT ≤ 100.0 ms, TPOT ≤ 50.0 ms)" in text


def test_report_and_compare_understand_a_load_run(
    sweep: tuple[LoadRun, Path],
    slotted: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run, db = sweep
    html = tmp_path / "load.html"
    assert main(["report", run.run_id, "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "latdoc.load/1"
    assert run.analysis.plateau is not None
    assert doc["knee"] == "8" and doc["plateau"] == run.analysis.plateau.window.label
    assert [lv["label"] for lv in doc["levels"]] == ["1", "2", "4", "8", "16"]
    assert main(["report", run.run_id, "--db", str(db), "--html", str(html)]) == 0
    page = html.read_text(encoding="utf-8")
    assert 'id="load-ttft-p50"' in page and 'id="load-knee"' in page
    assert 'id="load-throughput"' in page and 'id="load-goodput"' in page
    assert 'id="load-plateau"' in page
    with Store(db) as store:
        again = reload_load(store, run.run_id)
        assert again.analysis == run.analysis
        second = load_endpoint(
            _plan(slotted, concurrency=(1, 4), duration_per_level=1.0), store=store
        )
    capsys.readouterr()
    assert main(["compare", run.run_id, second.run_id, "--db", str(db), "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    labels = {g["label"] for g in compared["groups"]}
    assert any("4 at once" in label for label in labels), labels
    assert not any("16 at once" in label for label in labels)


def test_open_loop_achieves_the_rates_it_can(
    slotted: str, tmp_path: Path, machine_noise: MachineNoise
) -> None:
    with Store(tmp_path / "open.db") as store, held_back() as held:
        run = load_endpoint(_plan(slotted, rates=(5.0, 10.0), duration_per_level=3.0), store=store)
    for lv, asked in zip(run.analysis.levels, (5.0, 10.0), strict=True):
        assert lv.window.rate == asked
        assert lv.sustained is True
        assert lv.window.scheduled is not None
        sent = round(lv.sent_per_s * lv.window.seconds)
        assert sent + lv.window.unsent == lv.window.scheduled
        # An arrival goes unsent only when the generator reaches it after the window
        # ended: one due in the last moments of it, while something held the process
        # back. At most the arrival it was on, and those due in the time it was held.
        assert lv.window.unsent <= 1 + math.ceil(asked * held.ms / 1000), held
        # A Poisson count over 3 s: within 40% of the asked rate (seeded).
        assert lv.sent_per_s == pytest.approx(asked, rel=0.4)
        assert lv.window.late_ms_p50 is not None
        assert lv.window.late_ms_p50 < machine_noise.bound_ms(20, 100)
    assert {s.step for s in run.samples} == {Step.ARRIVALS}
    assert {s.concurrency for s in run.samples} == {1, 2}


def test_an_impossible_rate_is_reported_with_the_achieved_one(slotted: str, tmp_path: Path) -> None:
    with Store(tmp_path / "fast.db") as store:
        run = load_endpoint(
            _plan(slotted, rates=(400.0,), duration_per_level=1.0, max_in_flight=4), store=store
        )
    (lv,) = run.analysis.levels
    assert lv.sustained is False
    # Four streams of ~170 ms can send about 23 a second, not 400.
    assert lv.sent_per_s < 0.15 * 400
    text = render_text(render_load(run.analysis, run.notes))
    assert f"could not sustain 400/s: it sent {lv.sent_per_s:.1f}/s" in text


def test_errors_past_the_threshold_stop_the_sweep(lab: LabFactory, tmp_path: Path) -> None:
    fast = LatencyModel(prefill_base_ms=5.0, decode_ms_per_token=1.0)
    config = LabConfig(latency=fast, fault=Fault.SERVER_ERROR, fault_rate=0.7, seed=1)
    with lab(config) as server, Store(tmp_path / "err.db") as store:
        started = time.monotonic()
        run = load_endpoint(
            _plan(server.base_url, concurrency=(1, 2, 4), max_error_rate=0.3), store=store
        )
        elapsed = time.monotonic() - started
    assert [lv.window.label for lv in run.analysis.levels] == ["1"]
    assert elapsed < 1.5
    (lv,) = run.analysis.levels
    assert lv.error_rate > 0.3
    assert any("stopped early" in n.text for n in run.notes)
    assert any("sweep stopped there" in n.text for n in run.notes)


def test_ctrl_c_keeps_every_finished_trace_and_reports(slotted: str, tmp_path: Path) -> None:
    db = tmp_path / "int.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "latdoc", "load", slotted, "-m", "lab-sim", "--db", str(db),
         "--max-tokens", str(OUTPUT), "--concurrency", "2,4", "--duration-per-level", "10"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    stored = wait_for_samples(db, 8, 30)
    assert stored >= 8, "the run did not store traces in time"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Latency by level" in out
    assert "interrupted by the user" in out
    with sqlite3.connect(db) as conn:
        status, kind = conn.execute("SELECT status, kind FROM runs").fetchone()
        kept = conn.execute("SELECT count(*) FROM samples").fetchone()[0]
    assert (status, kind) == ("interrupted", "load")
    assert kept >= stored
    assert "Traceback" not in err


def test_diagnose_concurrency_sets_the_load_step(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quick = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.02, decode_ms_per_token=1.0)
    db = tmp_path / "diag.db"
    with lab(LabConfig(latency=quick)) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--json",
             "--max-tokens", "8", "--concurrency", "6", "--max-seconds", "30"]
        )  # fmt: skip
    assert code == 0
    assert "then 6 at once" in capsys.readouterr().err
    with Store(db) as store:
        (info,) = store.list_runs()
        _, samples, _ = store.load_run(info.run_id)
    at_once = [s for s in samples if s.step == Step.LOAD and s.concurrency > 1]
    assert len(at_once) == 6 and {s.concurrency for s in at_once} == {6}
    assert info.meta["concurrency"] == 6


def test_the_budget_bounds_the_sweep(slotted: str, tmp_path: Path) -> None:
    with Store(tmp_path / "budget.db") as store:
        run = load_endpoint(_plan(slotted, concurrency=(2, 4), max_requests=10), store=store)
    assert len(run.samples) == 10
    assert any("budget" in n.text for n in run.notes)


def test_metrics_serve_the_sweep_while_it_runs(lab: LabFactory, tmp_path: Path) -> None:
    """``--metrics-port``: Prometheus exposition of every request the sweep sends."""
    import socket
    import threading

    import httpx

    pytest.importorskip("prometheus_client")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    scraped: list[str] = []

    def scrape() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not scraped:
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=1).text
            except httpx.HTTPError:
                time.sleep(0.05)
                continue
            if "latdoc_requests_total{" in text:
                scraped.append(text)
            time.sleep(0.05)

    with lab(LabConfig(latency=LatencyModel(prefill_base_ms=5, decode_ms_per_token=5))) as server:
        poller = threading.Thread(target=scrape)
        poller.start()
        code = main(["load", server.base_url, "-m", "lab-sim", "--concurrency", "1,2",
                     "--duration-per-level", "1", "--max-tokens", "8", "--metrics-port",
                     str(port), "--db", str(tmp_path / "m.db")])  # fmt: skip
        poller.join()
    assert code == 0
    assert scraped, "no scrape saw a request counted"
    assert 'model="lab-sim"' in scraped[0] and "latdoc_ttft_seconds_bucket{" in scraped[0]
