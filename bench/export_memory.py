"""What ``latdoc export`` holds in memory: its peak resident size exporting a run of
100,000 and of 1,000,000 requests, in each format.

The runs are made of one lab request's sample repeated with new indices and starts
(written straight to a store file, in batches), so the rows are real rows of the
store. Each export runs as its own ``latdoc export`` process, writing to a file; its
peak resident size is the child's ``ru_maxrss``. Bounded memory shows as the same
peak at both sizes. Run: ``.venv/bin/python bench/export_memory.py`` (about 2 GB of
disk and some minutes for the larger run).
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from latdoc.records import Sample, Step
from latdoc.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from report_samples import run_samples

_EXPORT = """
import resource, sys
from latdoc.cli import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def make_run(db: Path, n: int) -> str:
    seed = run_samples()
    with Store(db) as store:
        run_id = store.new_run(
            endpoint="http://127.0.0.1:1/v1", model="lab-sim", scenario="chat", meta={}
        )
        batch: list[Sample] = []
        for i in range(n):
            base = seed[i % len(seed)]
            trace = dataclasses.replace(
                base.trace, started_at=base.trace.started_at + timedelta(milliseconds=i)
            )
            batch.append(dataclasses.replace(base, trace=trace, index=i, step=Step.LOAD))
            if len(batch) == 20_000:
                store.add_samples(run_id, batch)
                batch = []
        store.add_samples(run_id, batch)
        store.finish_run(run_id, status="done", diagnosis=None)
    return run_id


def export_peak(db: Path, run_id: str, fmt: str, out: Path) -> tuple[float, float]:
    """Peak resident MB of one ``latdoc export`` process, and its wall seconds."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _EXPORT, "export", run_id, "--db", str(db), "--format", fmt,
         "-o", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )  # fmt: skip
    peak_kb = int(done.stderr.strip().splitlines()[-1])
    return peak_kb / 1024, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--formats", default="jsonl,csv,parquet")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'requests':>10} {'format':>8} {'peak MB':>8} {'seconds':>8} {'file MB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            db = Path(tmp) / f"{n}.db"
            run_id = make_run(db, n)
            for fmt in args.formats.split(","):
                out = Path(tmp) / f"{n}.{fmt}"
                peak, seconds = export_peak(db, run_id, fmt, out)
                size = out.stat().st_size / 2**20
                print(f"{n:>10} {fmt:>8} {peak:>8.0f} {seconds:>8.1f} {size:>8.0f}", flush=True)
                out.unlink()
            db.unlink()
            for extra in ("-wal", "-shm"):
                Path(f"{db}{extra}").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
