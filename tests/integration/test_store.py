"""The store: lossless trace records, runs in SQLite, export/import, and no secrets on disk."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from latdoc import (
    Store,
)
from latdoc.store import (
    sample_to_record,
)
from paths import ROOT
from unit.store import test_store as unit_store
from unit.store.test_store import BROKEN, make_sample

db = unit_store.db
"""The unit tests' store file (a fixture)."""

_CRASHING_WRITER = """
import json, os, sys
from latdoc.store import Store, sample_from_record
store = Store(sys.argv[1])
run_id = store.new_run(endpoint="http://lab", model="m", scenario="chat", meta={})
for record in json.loads(sys.stdin.read()):
    store.add_sample(run_id, sample_from_record(record))
print(run_id, flush=True)
os._exit(1)
"""


def test_an_interrupted_run_keeps_every_sample_added_before(db: Path) -> None:
    stored = [make_sample(i, error=BROKEN if i == 2 else None) for i in range(3)]
    crashed = subprocess.run(
        [sys.executable, "-c", _CRASHING_WRITER, str(db)],
        input=json.dumps([sample_to_record(s) for s in stored]),
        capture_output=True,
        text=True,
        check=False,
    )
    assert crashed.returncode == 1, crashed.stderr
    run_id = crashed.stdout.strip()

    with Store(db) as reopened:
        info, loaded, diagnosis = reopened.load_run(run_id)
    # The writer's process is gone: the next open finds the run interrupted, not running.
    assert (info.status, info.requests, info.failed) == ("interrupted", 3, 1)
    assert [n.text for n in info.notes] == [
        f"interrupted: its process (pid {info.owner.pid if info.owner else '?'} on "
        f"{socket.gethostname()}) ended without closing the run; 3 traces kept"
    ]
    ends = [s.trace.started_at + timedelta(milliseconds=s.trace.total_ms or 0) for s in stored]
    assert info.finished_at is not None
    assert abs((info.finished_at - max(ends)).total_seconds()) < 1e-3
    assert loaded == stored
    assert diagnosis is None


def test_the_scale_benchmark_runs_and_prints_its_ratios() -> None:
    bench = ROOT / "bench" / "store_scale.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--traces", "2000"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert re.search(r"insert rate: +[\d,]+ traces/s .*× the 50,000/s target", done.stdout)
    assert re.search(r"on disk: +[\d,]+ bytes per trace", done.stdout)
    assert done.stdout.count("24 buckets") == 2, done.stdout
