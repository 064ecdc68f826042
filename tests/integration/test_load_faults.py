"""``latdoc load`` when things fail around it: the server killed mid-level under 256 streams,
the disk holding the store filling mid-run, and other commands writing the same store.

Each command runs as a subprocess against a lab server in a child process, so a server
can be SIGKILLed and a store can sit on a small tmpfs of its own (mounted in a user
namespace: ``unshare --user --map-root-user --mount``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from latdoc import Store
from latdoc.cli import main
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from paths import ROOT, TESTS

SRC = str(ROOT / "src")
ENV = {**os.environ, "PYTHONPATH": SRC, "PYTHONUNBUFFERED": "1"}
STREAMS = 256
SLOW_ENOUGH = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.0, decode_ms_per_token=40.0)
"""About 2.6 s a request at 64 tokens, paced by the server, not by the client: the
streams' first requests are all mid-body for most of that."""
BOUND_S = 60
"""No command here may take longer, whatever the fault."""


def _latdoc(*args: str) -> list[str]:
    return [sys.executable, "-m", "latdoc", *args]


def _wait_for_run(db: Path, seconds: float) -> bool:
    """Wait until a run is in ``db`` (a sweep's levels start right after)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if db.exists():
            with contextlib.closing(sqlite3.connect(db)) as conn:
                try:
                    if conn.execute("SELECT count(*) FROM runs").fetchone()[0]:
                        return True
                except sqlite3.OperationalError:
                    pass
        time.sleep(0.02)
    return False


def _kill(server: LabProcess) -> float:
    """SIGKILL the lab's child process; the wall-clock time it died."""
    process = server._process
    assert process is not None
    at = time.time()
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    return at


@pytest.mark.parametrize("max_error_rate", ["0.5", "1"])
def test_the_server_killed_mid_level_at_256_streams(
    tmp_path: Path, max_error_rate: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every request in flight when the server dies is kept, typed with the phase it
    failed in; new ones are refused at connect; the level is marked partial; the sweep
    stops there or goes on as the error budget says; nothing hangs."""
    db = tmp_path / "kill.db"
    with LabProcess(LabConfig(latency=SLOW_ENOUGH)) as server:
        started = time.monotonic()
        proc = subprocess.Popen(
            _latdoc("load", server.base_url, "-m", "lab-sim", "--concurrency", f"{STREAMS},16",
                    "--duration-per-level", "5", "--max-tokens", "64", "--max-seconds", "40",
                    "--max-error-rate", max_error_rate, "--json", "--db", str(db)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
        )  # fmt: skip
        try:
            # The streams' first requests all leave together as the level starts, just
            # after the run is stored, and are mid-body until ~2.6 s after.
            assert _wait_for_run(db, 30), "the sweep did not start in time"
            time.sleep(1.5)
            killed_at = _kill(server)
            out, err = proc.communicate(timeout=BOUND_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        elapsed = time.monotonic() - started
    assert "Traceback" not in err
    assert elapsed < 30, f"the sweep took {elapsed:.0f} s after the server died"
    document = json.loads(out)
    first = document["levels"][0]
    notes = document["notes"]

    with Store(db) as store:
        (run,) = store.list_runs()
        info, samples, _ = store.load_run(run.run_id)
    assert info.status == "done"
    assert len(samples) == sum(level["requests"] for level in document["levels"])
    # Exit 1 says that every request failed (the server died before any was back).
    assert proc.returncode == (1 if all(not s.trace.ok for s in samples) else 0), err
    # Sorted by where they started against the kill: those in flight, those sent after.
    in_flight: Counter[tuple[str, str]] = Counter()
    after: Counter[tuple[str, str]] = Counter()
    for sample in samples:
        trace = sample.trace
        if trace.error is None:
            continue
        key = (trace.error.code, str(trace.error.phase))
        if trace.started_at.timestamp() < killed_at:
            in_flight[key] += 1
        else:
            after[key] += 1
    with capsys.disabled():
        print(f"in flight at the kill, failed: {dict(in_flight)}; sent after: {dict(after)}")
    # In flight: broken mid-body (or, at 256 streams on a busy machine, one still
    # writing its request), or (queued in the client) refused at connect.
    assert in_flight, "no request was in flight when the server died"
    broken = {("stream_broken", phase) for phase in ("send", "wait", "first_token", "stream")}
    assert set(in_flight) <= broken | {("connect", "connect")}
    assert in_flight[("stream_broken", "stream")] > 0
    # Sent after: refused at connect (one that got in just as the server died breaks).
    # Under a budget of half the requests failing, the level may stop before any stream
    # sends again (beside other work, no request sent after the kill was refused in one
    # run of five).
    assert set(after) <= broken | {("connect", "connect")}
    if max_error_rate == "1":
        assert after[("connect", "connect")] > 0

    # The report says the same, level by level.
    reported = Counter()
    for level in document["levels"]:
        assert sum(f["count"] for f in level["failures"]) == level["failed"]
        for f in level["failures"]:
            reported[(f["code"], f["phase"])] += f["count"]
    assert reported == in_flight + after

    if max_error_rate == "0.5":
        assert [level["label"] for level in document["levels"]] == [str(STREAMS)]
        assert first["window"]["partial"] is True
        assert any(n.startswith(f"level {STREAMS} stopped early:") for n in notes), notes
        assert "the sweep stopped there: too many requests failed" in notes
        # Stored, and reported again from the store.
        capsys.readouterr()
        assert main(["report", run.run_id, "--db", str(db)]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert f"{STREAMS} (partial)" in text
        assert f"Failed at {STREAMS} (partial): " in text
        refused = after[("connect", "connect")] + in_flight[("connect", "connect")]
        assert (f"{refused} connect during connect" in text) == (refused > 0), text
    else:
        # A budget that allows every failure: the level runs its time, unmarked, and the
        # sweep goes on until another budget says (here the request budget: the streams
        # meet nobody listening, so their failures come fast).
        assert not any("--max-error-rate" in n or "sweep stopped there" in n for n in notes)
        labels = [level["label"] for level in document["levels"]]
        if labels == [str(STREAMS)]:
            assert "levels from 16 on left out: the budget ran out" in notes, notes
        else:
            assert labels == [str(STREAMS), "16"]
            second = document["levels"][1]
            assert [(f["code"], f["phase"]) for f in second["failures"]] == [("connect", "connect")]


def _can_mount_tmpfs(where: Path) -> str | None:
    """Why a tmpfs cannot be mounted in a user namespace here, or ``None`` if it can."""
    try:
        done = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
             f"mount -t tmpfs -o size=64k tmpfs {shlex.quote(str(where))}"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare cannot run: {exc}"
    if done.returncode != 0:
        return f"unshare --user --mount is not permitted here: {done.stderr.strip()}"
    return None


def test_a_full_disk_stops_the_load_with_one_line_and_keeps_what_was_stored(
    tmp_path: Path,
) -> None:
    """The store's disk fills mid-run: one line of error, no traceback; every trace
    stored before is still there and the store opens (``latdoc runs`` lists the run
    with its count)."""
    mount, out = tmp_path / "small", tmp_path / "out"
    mount.mkdir()
    out.mkdir()
    why = _can_mount_tmpfs(mount)
    if why is not None:
        pytest.skip(why)
    db = mount / "store" / "latdoc.db"
    fast = LatencyModel(prefill_base_ms=2.0, prefill_ms_per_token=0.0, decode_ms_per_token=1.0)
    with LabProcess(LabConfig(latency=fast)) as server:
        load = _latdoc("load", server.base_url, "-m", "lab-sim", "--concurrency", "4,8",
                       "--duration-per-level", "10", "--max-tokens", "4", "--max-seconds",
                       "30", "--db", str(db))  # fmt: skip
        runs = _latdoc("runs", "--db", str(db))
        q = shlex.quote
        script = "\n".join(
            [
                f"mount -t tmpfs -o size=2m tmpfs {q(str(mount))} || exit 99",
                f"{shlex.join(load)} >{q(str(out / 'load.out'))} 2>{q(str(out / 'load.err'))}",
                f"echo $? >{q(str(out / 'load.rc'))}",
                f"{shlex.join(runs)} >{q(str(out / 'runs.out'))} 2>{q(str(out / 'runs.err'))}",
                f"echo $? >{q(str(out / 'runs.rc'))}",
                f"cp {q(str(db))}* {q(str(out))}/",
            ]
        )
        started = time.monotonic()
        done = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
            capture_output=True, text=True, timeout=BOUND_S, env=ENV,
        )  # fmt: skip
        elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    err = (out / "load.err").read_text()
    print(f"load, stderr: {err!r}; {elapsed:.1f} s")
    assert (out / "load.rc").read_text().strip() == "1"
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    (line,) = lines
    assert line.startswith(
        f"Error: the store {db} could not keep a trace (database or disk is full)"
    )
    kept = int(line.split("; ")[1].split(" of ")[0])
    assert kept > 0
    assert elapsed < 20, "the load went on after the disk was full"

    # What was measured until then is still reported on stdout.
    assert "Latency by level" in (out / "load.out").read_text()

    # The store still opens: inside the full tmpfs (``latdoc runs``) and copied out.
    assert (out / "runs.rc").read_text().strip() == "0", (out / "runs.err").read_text()
    listing = (out / "runs.out").read_text()
    (row,) = [r for r in listing.splitlines() if "lab-sim" in r]
    assert row.split()[3] in ("failed", "interrupted") and row.split()[4] == str(kept), listing
    with Store(out / "latdoc.db") as store:
        (run,) = store.list_runs()
        info, samples, _ = store.load_run(run.run_id)
    assert len(samples) == kept and info.requests == kept
    assert all(s.trace.ok for s in samples)
    assert info.status in ("failed", "interrupted")
    assert info.finished_at is not None and info.finished_at >= info.started_at


_BUSY_WRITER = """
import sys, time
from pathlib import Path
from latdoc import Store
from latdoc.cli import main
from unit.store.test_store import make_sample

db, seconds, stop = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
batch = [make_sample(i) for i in range(200)]
with Store(db) as store:
    run_id = store.new_run(endpoint="http://busy", model="m", scenario="", meta={}, kind="load")
    print("started", flush=True)
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end and not stop.exists():
        store.add_samples(run_id, batch)
        n += len(batch)
    store.finish_run(run_id, status="done", diagnosis=None)
print(n)
"""
"""Commits batches back to back, as a load's writer does at its busiest."""

_SHORT_WRITER = """
import sys, time
from latdoc import Store
from latdoc.cli import main
from unit.store.test_store import make_sample

db, runs = sys.argv[1], int(sys.argv[2])
errors, longest = [], 0.0
for k in range(runs):
    started = time.monotonic()
    try:
        with Store(db) as store:
            run_id = store.new_run(endpoint="http://short", model="m", scenario="", meta={},
                                   kind="watch")
            store.add_sample(run_id, make_sample(0))
            store.add_sample(run_id, make_sample(1))
            store.finish_run(run_id, status="done", diagnosis=None)
    except Exception as exc:
        errors.append(repr(exc))
    longest = max(longest, time.monotonic() - started)
print(len(errors), round(longest, 3), *errors[:1], sep="\\t")
"""
"""Opens the store, keeps a run of two traces, closes it: a watch's tick or a diagnosis."""


def test_a_writer_committing_back_to_back_locks_no_other_writer_out(tmp_path: Path) -> None:
    """A busy writer commits the moment it can; three others, each keeping short runs,
    still get their turn within a moment, none is told "database is locked", and every
    trace each kept is in the store."""
    db, stop = tmp_path / "shared.db", tmp_path / "stop"
    env = {**ENV, "PYTHONPATH": os.pathsep.join([SRC, str(TESTS)])}
    Store(db).close()
    busy = subprocess.Popen(
        [sys.executable, "-c", _BUSY_WRITER, str(db), "30", str(stop)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert busy.stdout is not None and busy.stdout.readline().strip() == "started"
        time.sleep(0.3)
        short = [
            subprocess.Popen(
                [sys.executable, "-c", _SHORT_WRITER, str(db), "10"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for _ in range(3)
        ]
        results = [p.communicate(timeout=BOUND_S) for p in short]
        stop.touch()
        busy_out, busy_err = busy.communicate(timeout=BOUND_S)
    finally:
        for p in (busy, *short):
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert busy.returncode == 0, busy_err
    busy_kept = int(busy_out.strip())
    waits = []
    for (out, err), p in zip(results, short, strict=True):
        assert p.returncode == 0, err
        errors, longest, *first = out.strip().split("\t")
        print(f"short writer: {errors} errors, longest run {longest} s {first}")
        assert errors == "0", first
        waits.append(float(longest))
    with Store(db) as store:
        runs = store.list_runs(limit=100)
    assert len(runs) == 1 + 3 * 10
    assert all(r.status == "done" for r in runs)
    assert sorted(r.requests for r in runs) == [2] * 30 + [busy_kept]
    print(f"busy writer kept {busy_kept} traces; the short writers' longest run {max(waits)} s")


_STALLED_WRITER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""
"""Holds the store's write lock, as a commit stalled on a slow disk does."""

STALL_S = 9.0
"""Longer than SQLite's usual busy timeout of 5 s, after a command's start-up."""


def test_two_watches_a_load_and_a_diagnose_write_one_store_at_once(tmp_path: Path) -> None:
    """Four commands keep their runs in one store at once, the store stalled by another
    writer for a while as they start: each finishes, none says "database is locked", and
    the store holds every trace each says it kept."""
    db = tmp_path / "shared.db"
    Store(db).close()
    lab = LatencyModel(prefill_base_ms=2.0, prefill_ms_per_token=0.0, decode_ms_per_token=1.0)
    with LabProcess(LabConfig(latency=lab)) as server:
        url = server.base_url
        # A tick is three requests; the watch refuses a tick longer than its interval,
        # and four commands at once beside a busy core took 0.5 s for one: a second
        # each keeps the watches ticking, not racing their interval.
        watch = ("watch", url, "-m", "lab-sim", "--every", "1s", "--duration", "4s",
                 "--jitter", "0", "--max-tokens", "4", "--long-tokens", "96",
                 "--db", str(db))  # fmt: skip
        commands = {
            "watch a": _latdoc(*watch, "--name", "a"),
            "watch b": _latdoc(*watch, "--name", "b"),
            "load": _latdoc("load", url, "-m", "lab-sim", "--concurrency", "32,64",
                            "--duration-per-level", "1.5", "--max-tokens", "4", "--db", str(db)),
            "diagnose": _latdoc("diagnose", url, "-m", "lab-sim", "--max-tokens", "4",
                                "--max-requests", "16", "--db", str(db)),
        }  # fmt: skip
        stall = subprocess.Popen(
            [sys.executable, "-c", _STALLED_WRITER, str(db), str(STALL_S)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert stall.stdout is not None and stall.stdout.readline().strip() == "holding"
        started = time.monotonic()
        procs = {
            name: subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
            )
            for name, argv in commands.items()
        }
        try:
            outputs = {name: p.communicate(timeout=BOUND_S) for name, p in procs.items()}
            stall.communicate(timeout=BOUND_S)
        finally:
            for p in (stall, *procs.values()):
                if p.poll() is None:
                    p.kill()
                    p.communicate()
        elapsed = time.monotonic() - started
    for name, (out, err) in outputs.items():
        assert "locked" not in out + err, f"{name}: {err}"
        assert "Traceback" not in err, f"{name}: {err}"
        assert procs[name].returncode == 0, f"{name}: {err}"

    said: dict[str, int] = {}
    for name in ("load", "diagnose"):
        line = next(x for x in outputs[name][1].splitlines() if x.startswith("Run "))
        said[name] = int(line.split(": ")[1].split(" traces kept")[0])
    for name in ("watch a", "watch b"):
        # "Watch 'a': 9 ticks, 26 requests this time; stopped because ..."
        line = next(x for x in outputs[name][1].splitlines() if "requests this time" in x)
        said[name] = int(line.split(", ")[1].split(" requests")[0])
    with Store(db) as store:
        runs = store.list_runs()
        kept = {
            ("watch " + r.meta["name"]) if r.kind == "watch" else r.kind: r.requests for r in runs
        }
        statuses = {r.kind: r.status for r in runs}
    print(f"said kept: {said}; in the store: {kept}; {elapsed:.1f} s")
    assert kept == said
    assert all(n > 0 for n in said.values())
    assert set(statuses.values()) == {"done"}
    assert elapsed < STALL_S + 30
