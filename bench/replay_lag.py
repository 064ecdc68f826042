"""How closely ``latdoc load --trace`` keeps a trace's schedule: each request's send time
against its time in the trace, at the trace's own pace and faster.

The shipped Mooncake-style sample (120 requests over 32 s, three shared prefixes) is
replayed against the simulated endpoint in its own process (with its prefix cache), at
1×, 4× and 16×. Lag is read from the stored traces (each request's wall-clock start
against the first's, less its scheduled offset), so it is what was sent, not what the
scheduler meant. Run: ``.venv/bin/python bench/replay_lag.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
from pathlib import Path

import numpy as np

from latdoc.cli import main as latdoc
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.store import Store
from latdoc.workload.traces import open_trace

SAMPLE = Path(__file__).resolve().parents[1] / "src/latdoc/workload/traces/samples/mooncake.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speeds", default="1,4,16")
    args = parser.parse_args()
    schedule = np.array([r.at_s or 0.0 for r in open_trace(SAMPLE)])
    model = LatencyModel(prefill_base_ms=10.0, prefill_ms_per_token=0.05, decode_ms_per_token=1.0)
    print(f"{'speed':>6} {'requests':>9} {'lag p50 ms':>11} {'p99 ms':>8} {'max ms':>8} "
          f"{'> 5 ms':>7} {'cache hits':>11}")  # fmt: skip
    with (
        tempfile.TemporaryDirectory() as tmp,
        LabProcess(LabConfig(latency=model, prefix_cache=True)) as server,
    ):
        for speed in (float(s) for s in args.speeds.split(",")):
            db = Path(tmp) / f"{speed}.db"
            quiet = io.StringIO()
            with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                latdoc(["load", server.base_url, "-m", "lab-sim", "--trace", str(SAMPLE),
                        "--speed", f"{speed:g}", "--max-tokens", "16",
                        "--db", str(db)])  # fmt: skip
            with Store(db) as store:
                (info,) = store.list_runs(limit=1)
                _, samples, _ = store.load_run(info.run_id)
            starts = np.array(sorted(s.trace.started_ns or 0 for s in samples), dtype=float)
            sent = (starts - starts[0]) / 1e9
            lag = (sent - schedule[: len(sent)] / speed) * 1000
            lag -= min(0.0, lag.min())
            hits = sum(1 for s in samples if (s.trace.cached_prompt_tokens or 0) > 0)
            print(f"{speed:>5g}× {len(samples):>9} {np.percentile(lag, 50):>11.2f} "
                  f"{np.percentile(lag, 99):>8.2f} {lag.max():>8.2f} {int((lag > 5).sum()):>7} "
                  f"{hits:>6}/{len(samples)}")  # fmt: skip


if __name__ == "__main__":
    main()
