"""The store at a million traces: insert rate, bytes per trace, and an hour-of-day report.

Generates synthetic traces (one chunk per output token, 32 to 128 tokens, 5 % of
them failed) spread over a simulated 24 h into a temporary store as one watch
(``scale``: ticks of a cold short, a warm short and a long request), through the
batched writer (``Store.batch``). Prints the insert rate (store time only: the
traces are built in between, off the clock), the file size per trace, then the
time and peak RSS of ``Store.aggregate(run, bucket=1 h, cycle=1 day)``, the
query behind ``latdoc report --by hour-of-day``, each in a fresh process, beside
the same percentiles ranked inside SQLite by a window query, for comparison; and
the whole command, ``latdoc report --watch scale --by hour-of-day``, in a fresh
process (wall time from start to exit, peak RSS from the kernel's ``wait4``).
Ratios are against the targets: >= 50,000 inserts/s, <= 5 s, <= 500 MB.

Run: ``.venv/bin/python bench/store_scale.py [--traces N]`` (1,000,000 by default;
a few minutes on two cores, about 2 GB of temporary disk).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.records import Chunk, RequestTrace, Sample, Step
from latdoc.store import Store

INSERT_TARGET = 50_000.0
"""Samples per second a busy writer should sustain."""
QUERY_TARGET_S = 5.0
RSS_TARGET_MB = 500.0
BUILD_BATCH = 10_000
DAY = datetime(2026, 11, 29, tzinfo=UTC)
URL = "https://api.example.com/v1/chat/completions"
WATCH = "scale"
TICK = ((64, True), (64, False), (1024, False))
"""A watch tick's requests: prompt tokens and whether it opens the connection."""


def synthetic(rng: random.Random, index: int, total: int) -> Sample:
    """One request of the simulated day: slower TTFT in the busy afternoon hours."""
    target, cold = TICK[index % len(TICK)]
    offset_s = index * 86_400 / total + rng.random() * 0.05
    start = DAY + timedelta(seconds=offset_s)
    hour = offset_s / 3600
    busy = 1.0 + (1.5 if 13 <= hour < 18 else 0.0)
    ttft_ns = int(rng.lognormvariate(5.0, 0.4) * busy * 1_000_000)
    if rng.random() < 0.05:
        error = TraceError(ErrorKind.HTTP, Phase.WAIT, "HTTP 429: rate limited", 429)
        trace = RequestTrace(
            started_at=start, t0_ns=index * 1000, url=URL, model="m", dialect="chat",
            http_version="HTTP/1.1", new_connection=False, queue_done_ns=20_000,
            dns_done_ns=20_000, connect_done_ns=20_000, tls_done_ns=20_000, sent_ns=80_000,
            sent_acked=True, first_byte_ns=ttft_ns // 3, done_ns=None, status=429,
            request_bytes=812, response_bytes=140, error=error,
            started_ns=int(start.timestamp()) * 1_000_000_000 + int(offset_s % 1 * 1e9),
            request_id=f"{index:032x}",
        )  # fmt: skip
        return Sample(Step.WATCH, trace, target, 1, cold, index)
    tokens = rng.randint(32, 128)
    itl_ns = int(rng.uniform(8, 25) * 1_000_000)
    chunks = tuple(
        Chunk(ttft_ns + i * itl_ns + rng.randint(0, 900_000), rng.randint(2, 7), 1)
        for i in range(tokens)
    )
    trace = RequestTrace(
        started_at=start, t0_ns=index * 1000, url=URL, model="m", dialect="chat",
        http_version="HTTP/1.1", remote_ip="203.0.113.7", connection_id=index % 64,
        new_connection=False, queue_done_ns=20_000, dns_done_ns=20_000,
        connect_done_ns=20_000, tls_done_ns=20_000, sent_ns=80_000, sent_acked=True,
        first_byte_ns=ttft_ns - 400_000, first_token_ns=ttft_ns,
        done_ns=chunks[-1].t_ns + 300_000, status=200, chunks=chunks,
        chunk_tokens_exact=True, prompt_tokens=rng.randint(200, 4000), output_tokens=tokens,
        output_tokens_exact=True, finish_reason="length", request_bytes=812,
        response_bytes=tokens * 190, server_timing={"openai-processing-ms": ttft_ns / 1e6},
        started_ns=int(start.timestamp()) * 1_000_000_000 + int(offset_s % 1 * 1e9),
        request_id=f"{index:032x}", response_id=f"chatcmpl-{index:x}",
    )  # fmt: skip
    return Sample(Step.WATCH, trace, target, 1, cold, index)


def build(path: Path, total: int, seed: int) -> tuple[str, float]:
    """Fill a new store; return the run id and the seconds spent inside the store."""
    rng = random.Random(seed)
    in_store = 0.0
    with Store(path) as store:
        meta = {"name": WATCH, "options": {"short_tokens": TICK[0][0], "long_tokens": TICK[2][0]}}
        run_id = store.new_run(endpoint=URL, model="m", scenario="", meta=meta, kind="watch")
        with store.batch(run_id, max_samples=BUILD_BATCH, max_delay=60.0) as writer:
            for first in range(0, total, BUILD_BATCH):
                batch = [
                    synthetic(rng, i, total) for i in range(first, min(total, first + BUILD_BATCH))
                ]
                t = time.perf_counter()
                for sample in batch:
                    writer.add(sample)
                in_store += time.perf_counter() - t
                print(f"\r  {first + len(batch):>9,} traces", end="", file=sys.stderr, flush=True)
            t = time.perf_counter()
        in_store += time.perf_counter() - t
        store.finish_run(run_id, status="done", diagnosis=None)
    print(file=sys.stderr)
    return run_id, in_store


_QUERY = """
import json, sqlite3, sys, time
from datetime import timedelta
t = time.perf_counter()
from latdoc.store import Store
mode, path, run_id = sys.argv[1:4]
with Store(path) as store:
    if mode == "numpy":
        stats = store.aggregate(run_id, bucket=timedelta(hours=1), cycle=timedelta(days=1))
        rows = [(b.bucket, b.requests, b.errors, b.ttft_p50_ms, b.ttft_p95_ms) for b in stats]
    else:
        rows = sqlite3.connect(path).execute(
            "WITH ranked AS (SELECT started_ns / 3600000000000 % 24 AS b, ttft_ms, "
            "row_number() OVER (PARTITION BY started_ns / 3600000000000 % 24 "
            "ORDER BY ttft_ms) AS r, count(*) OVER (PARTITION BY "
            "started_ns / 3600000000000 % 24) AS n FROM samples "
            "WHERE run_id = ? AND ttft_ms IS NOT NULL) "
            "SELECT b, n, max(CASE WHEN r = (n + 1) / 2 THEN ttft_ms END), "
            "max(CASE WHEN r = (95 * n + 99) / 100 THEN ttft_ms END) "
            "FROM ranked GROUP BY b ORDER BY b",
            (run_id,),
        ).fetchall()
seconds = time.perf_counter() - t
hwm = 0
with open("/proc/self/status") as status:
    for line in status:
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
print(json.dumps({"seconds": seconds, "rss": hwm, "buckets": len(rows), "first": rows[0]}))
"""


def query(mode: str, path: Path, run_id: str) -> dict[str, float]:
    """Time and peak RSS of one hour-of-day aggregate, in a fresh process (imports included)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _QUERY, mode, str(path), run_id],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    result: dict[str, float] = json.loads(done.stdout)
    return result


_COMMAND = """
import json, os, subprocess, sys, time
t = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
_, status, usage = os.wait4(child.pid, 0)
seconds = time.perf_counter() - t
out, err = child.stdout.read().decode(), child.stderr.read().decode()
code = os.waitstatus_to_exitcode(status)
print(json.dumps({"seconds": seconds, "rss": usage.ru_maxrss * 1024, "code": code,
                  "out": out, "err": err}))
"""
"""Runs a command and reports its wall time and its own peak RSS (``wait4``'s ``ru_maxrss``,
KiB on Linux). A small process of its own, because a child's ``ru_maxrss`` counts the
memory it had before ``exec``: forked from this one, holding a built store's worth of
traces, the command would be charged for them. The report is small, so it cannot fill
the pipes before the child exits."""


def command(path: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (bytes) of ``latdoc report --watch`` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    report = ["-m", "latdoc", "report", "--watch", WATCH, "--by", "hour-of-day", "--db", str(path)]
    done = subprocess.run(
        [sys.executable, "-c", _COMMAND, sys.executable, *report],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    got = json.loads(done.stdout)
    if got["code"] != 0 or "Verdict:" not in got["out"]:
        raise SystemExit(f"latdoc report failed:\n{got['err']}")
    return float(got["seconds"]), float(got["rss"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", help="where to put the temporary store (default: system temp)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "scale.db"
        t = time.perf_counter()
        run_id, in_store = build(path, args.traces, args.seed)
        wall = time.perf_counter() - t
        rate = args.traces / in_store
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
        print(f"traces:          {args.traces:,} over a simulated 24 h (built in {wall:.0f} s)")
        print(
            f"insert rate:     {rate:,.0f} traces/s in the store "
            f"({rate / INSERT_TARGET:.2f}× the {INSERT_TARGET:,.0f}/s target)"
        )
        print(f"on disk:         {size / args.traces:,.0f} bytes per trace ({size / 1e6:,.0f} MB)")
        for mode, label in (("numpy", "Store.aggregate"), ("window", "SQL window ranks")):
            got = query(mode, path, run_id)
            seconds, rss_mb = got["seconds"], got["rss"] / 1e6
            print(
                f"by hour-of-day:  {label:<17} {seconds:6.2f} s "
                f"({seconds / QUERY_TARGET_S:.2f}× the {QUERY_TARGET_S:g} s limit), "
                f"peak RSS {rss_mb:5.0f} MB ({rss_mb / RSS_TARGET_MB:.2f}× the "
                f"{RSS_TARGET_MB:g} MB limit), {got['buckets']} buckets"
            )
        seconds, rss = command(path)
        rss_mb = rss / 1e6
        print(
            f"latdoc report --watch {WATCH} --by hour-of-day: {seconds:6.2f} s "
            f"({seconds / QUERY_TARGET_S:.2f}× the {QUERY_TARGET_S:g} s limit), "
            f"peak RSS {rss_mb:5.0f} MB ({rss_mb / RSS_TARGET_MB:.2f}× the "
            f"{RSS_TARGET_MB:g} MB limit)"
        )


if __name__ == "__main__":
    main()
