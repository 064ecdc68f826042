"""``latdoc watch``'s memory over a long watch: RSS after every block of ticks.

A watch keeps no trace in memory (each goes to the store as it finishes, and each
tick's connection is closed), so its resident set should stay flat however long it
runs. This runs one watch against the simulated endpoint (in its own process) with
the Prometheus metrics observing every trace, and prints the RSS of this process
every ``--report-every`` ticks, then the growth from the first report to the last.

The default is the issue's scale, one tick a second for an hour (3600 ticks);
``--every 0.05`` runs the same 3600 ticks in a few minutes.
Run: ``.venv/bin/python bench/watch_memory.py [--every 1] [--ticks 3600]``.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path

from latdoc.features.watch import WatchPlan, watch_endpoint
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.probe import Endpoint
from latdoc.records import Sample, Step
from latdoc.report.metrics import PrometheusMetrics
from latdoc.store import Store

FAST = LatencyModel(prefill_base_ms=2, prefill_ms_per_token=0.001, decode_ms_per_token=0.2)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=1.0, help="seconds between ticks")
    parser.add_argument("--ticks", type=int, default=3600)
    parser.add_argument("--report-every", type=int, default=300, help="ticks between reports")
    args = parser.parse_args()

    rows: list[tuple[int, float, float]] = []
    ticks = 0
    started = time.monotonic()
    metrics = PrometheusMetrics()

    def on_sample(sample: Sample) -> None:
        nonlocal ticks
        metrics.observe(sample.trace)
        if sample.step == Step.WATCH and sample.target_prompt_tokens == 256:
            ticks += 1
            if ticks % args.report_every == 0 or ticks == 1:
                gc.collect()
                rows.append((ticks, time.monotonic() - started, rss_mib()))
                print(f"tick {ticks:>5}  {rows[-1][1]:7.1f} s  RSS {rows[-1][2]:6.1f} MiB",
                      flush=True)  # fmt: skip

    with (
        tempfile.TemporaryDirectory() as tmp,
        LabProcess(LabConfig(latency=FAST)) as lab,
        Store(Path(tmp) / "watch.db") as store,
    ):
        plan = WatchPlan(
            endpoint=Endpoint(lab.base_url, "lab-sim"),
            every_s=args.every,
            until=None,
            jitter=0.0,
            long_tokens=256,
            max_tokens=8,
            seed=1,
        )
        # The request cap ends the watch after exactly `ticks` ticks; the duration is a backstop.
        run = watch_endpoint(
            plan,
            name="bench",
            store=store,
            max_requests=args.ticks * 3 + 2,
            token_budget=None,
            duration_s=(args.ticks + 1) * args.every,
            on_sample=on_sample,
        )
        stored = store.run_info(run.run_id).requests
    first, last = rows[1] if len(rows) > 1 else rows[0], rows[-1]
    print(
        f"{ticks} ticks, {stored} requests stored; RSS {first[2]:.1f} MiB at tick {first[0]} "
        f"→ {last[2]:.1f} MiB at tick {last[0]} ({last[2] - first[2]:+.1f} MiB)"
    )


if __name__ == "__main__":
    main()
