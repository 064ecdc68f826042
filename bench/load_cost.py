"""What ``latdoc load`` costs as a user runs it: CPU a request, the client's own delay and
the inter-token tail, at 256 streams from one core.

The lab runs in a process of its own pinned to one core, pacing 64 tokens at 20 ms, and
logs the moment it wrote each token (``LabConfig.write_log``: the server's own account,
in place of a packet capture). The real command, ``python -m latdoc load URL
--concurrency N --max-tokens 64``, runs as a subprocess pinned to the other core, twice:
a short level and a long one. Printed, from one run of each:

- CPU a request: the command's user + system CPU (the kernel's account of the child),
  the long run's less the short run's over the difference in requests, so start-up,
  imports and the report are taken out; the median of ``--repeat`` pairs (a level's CPU
  varies by a tenth from run to run, with how the streams' tokens happen to fall
  together into one wake of the reader), with their range, and the kernel's part of it;
- the same including start-up, for the long run alone;
- the client's own delay before a request left (``client_delay``), p50 and p99;
- ITL p99 as latdoc reads it (every trace's gaps between content chunks) against the
  lab's own write gaps p99, and per gap the size of the error (read gap less written
  gap) p50 and p99, where a trace's chunks match the lab's writes one to one;
- TTFT against the wire: each request's TTFT from its start less the lab's write of its
  first token less the request's first byte handed to the kernel, p50 and p99 (the goal:
  p99 within 20 ms, the first sends of 256 streams included), and how much later than
  its send a request was due (its TTFT from the due time less from its start, p50:
  within 1 ms on a level the client carries);
- merged: the share of gaps read as under 1 ms where the lab wrote them 1 ms or more
  apart (segments the kernel merged because nothing read the socket in time: the later
  one's stamp is kept), and beside it the level's own count of gaps read together
  (``window.client.read_together``), which latdoc makes without the lab's log.

The goals beside them: 3.5 ms CPU a request, client delay p50 10 ms, ITL p99 within 1 ms
of the lab's. With ``--profile``, a third run of the long level under py-spy (every
thread, only while it holds the interpreter lock) says where the CPU went: each sample
is charged to the part of the command nearest its innermost frame (the store, the
progress display, the metrics, freezing the trace, the server's timing, the
kernel-stamp reader, SSE framing, decoding the events, HTTP, the event loop, …), in ms
a request.

Bounded: two (or three) levels of ``--seconds`` at most, the requests capped.
Run: ``.venv/bin/python bench/load_cost.py [--streams 256] [--seconds 12] [--profile]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.probe import loop_name
from latdoc.store import Store
from probe_overhead import pinned

DECODE_MS = 20.0
TOKENS = 64
GOAL_CPU_MS = 3.5
GOAL_DELAY_MS = 10.0
GOAL_ITL_MS = 1.0
GOAL_TTFT_MS = 20.0
GOAL_LATE_MS = 1.0


PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kernel-stamp reader", ("latdoc/probe/_arrivals.py",)),
    ("server timing", ("_server_timing", "latdoc/probe/_servertiming.py")),
    ("freezing the trace", ("latdoc/probe/_freeze.py", "latdoc/records.py")),
    ("store", ("latdoc/store/", "sqlite3")),
    ("progress display", ("latdoc/report/progress.py", "rich/")),
    ("metrics", ("latdoc/report/metrics.py", "prometheus_client/")),
    ("SSE framing", ("latdoc/probe/_sse.py", "latdoc/probe/_framing.py")),
    ("decoding events", ("latdoc/probe/_stream_state.py", "latdoc/probe/dialects/",
                         "latdoc/probe/_events.py", "json/")),
    ("socket reads", ("latdoc/probe/_kstream.py", "latdoc/probe/_backend.py",
                      "latdoc/probe/_aiostream.py", "latdoc/probe/_tcpinfo.py")),
    ("HTTP (httpcore, h11)", ("httpcore/", "h11/", "h2/", "hpack/")),
    ("request set-up", ("latdoc/probe/_session.py", "latdoc/probe/_recorder.py",
                        "latdoc/probe/_poolline.py", "latdoc/workload/")),
    ("load loop", ("latdoc/features/load/",)),
    ("analysis and report", ("latdoc/analysis/", "latdoc/report/", "numpy/", "scipy/")),
    ("start-up (imports)", ("<frozen importlib", "importlib/")),
    ("event loop (asyncio)", ("asyncio/", "selectors.py")),
)  # fmt: skip
"""Parts of the command a sample may be charged to, each by substrings of a frame's
function or file; a sample goes to the part of the innermost frame that names one."""


@dataclass
class Run:
    requests: int
    failed: int
    cpu_s: float
    system_s: float
    """Of ``cpu_s``, the kernel's time on the command's behalf (its syscalls)."""
    wall_s: float
    delay_ms: list[float]
    read_gaps_ms: list[float]
    written_gaps_ms: list[float]
    gap_errors_ms: list[float]
    ttft_errors_ms: list[float]
    """Each request's TTFT from its start less its TTFT on the wire: the lab's write of
    the first token less the request's first byte handed to the kernel."""
    late_ms: list[float]
    """Each request's TTFT from when it was due less its TTFT from its start."""
    merged: int
    gaps: int
    read_together: float | None
    """The level's own count of gaps read together (``window.client``), for the truth's
    merged gaps beside it."""


def _cpu_of_children() -> tuple[float, float]:
    """The children's CPU so far: user and system seconds."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def _command(url: str, streams: int, seconds: float, db: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "latdoc", "load", url, "-m", "lab-sim",
            "--concurrency", str(streams), "--max-tokens", str(TOKENS),
            "--duration-per-level", f"{seconds:g}", "--max-requests", "200000",
            "--max-seconds", str(seconds * 4 + 30), "--db", str(db), "--json", *extra]  # fmt: skip


def _client_env(client_src: str | None) -> dict[str, str] | None:
    """The command's environment: with ``client_src``, that tree's latdoc (another
    commit's ``src``, for a before and after from one lab)."""
    if client_src is None:
        return None
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": client_src + (os.pathsep + path if path else "")}


def run_once(
    url: str,
    streams: int,
    seconds: float,
    core: int,
    log: Path,
    extra: list[str],
    client_src: str | None = None,
) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "load.db"
        before = _cpu_of_children()
        start = time.perf_counter()
        with pinned(core):
            done = subprocess.run(
                _command(url, streams, seconds, db, extra),
                env=_client_env(client_src),
                capture_output=True,
                text=True,
                check=False,
                timeout=seconds * 4 + 60,
            )
        wall = time.perf_counter() - start
        after = _cpu_of_children()
        cpu, system = sum(after) - sum(before), after[1] - before[1]
        if done.returncode != 0:
            raise SystemExit(f"latdoc load failed ({done.returncode}): {done.stderr[-2000:]}")
        (level,) = json.loads(done.stdout)["levels"]
        together = (level["window"].get("client") or {}).get("read_together")
        with Store(db) as store:
            (info,) = store.list_runs()
            _, samples, _ = store.load_run(info.run_id)
    time.sleep(0.5)  # the lab appends a stream's line as it ends
    written = writes_of(log)
    traces = [s.trace for s in samples if s.trace.ok]
    delay = [d for t in traces if (d := t.client_delay_ms) is not None]
    read_gaps = [g for t in traces for g in t.itl_ms]
    written_gaps: list[float] = []
    errors: list[float] = []
    ttft_errors: list[float] = []
    merged = gaps = 0
    for trace in traces:
        writes = written.get(trace.request_id or "")
        if writes is None:
            continue
        if writes and trace.ttft_ms is not None and trace.write_start_ns is not None:
            wire = (writes[0] - trace.t0_ns - trace.write_start_ns) / 1e6
            ttft_errors.append(trace.ttft_ms - wire)
        lab_gaps = np.diff(np.asarray(writes, dtype=np.int64)) / 1e6
        written_gaps.extend(lab_gaps.tolist())
        arrivals = [c.t_ns for c in trace.chunks]
        if len(arrivals) != len(writes):
            continue
        read = np.diff(np.asarray(arrivals, dtype=np.int64)) / 1e6
        errors.extend(np.abs(read - lab_gaps).tolist())
        merged += int(np.count_nonzero((read < 1.0) & (lab_gaps >= 1.0)))
        gaps += read.size
    failed = [s.trace.error for s in samples if not s.trace.ok]
    if failed:
        kinds = sorted({f"{e.kind}/{e.phase}" for e in failed if e is not None})
        print(f"  {len(failed)} of {len(samples)} requests failed: {', '.join(kinds)}")
    return Run(
        len(samples),
        len(failed),
        cpu,
        system,
        wall,
        delay,
        read_gaps,
        written_gaps,
        errors,
        ttft_errors,
        [t.due_ttft_ms - t.ttft_ms for t in traces
         if t.due_ttft_ms is not None and t.ttft_ms is not None],
        merged,
        gaps,
        together,
    )  # fmt: skip


def profile(
    url: str, streams: int, seconds: float, core: int, out: Path, client_src: str | None = None
) -> tuple[int, dict[str, int], dict[str, int]]:
    """The long level again under py-spy: its requests, and samples by part and by
    innermost function."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "load.db"
        spy = Path(sys.executable).with_name("py-spy")
        with pinned(core):
            subprocess.run(
                [str(spy), "record", "--format", "raw", "--rate", "250", "--gil",
                 "--output", str(out), "--", *_command(url, streams, seconds, db, [])],
                env=_client_env(client_src), capture_output=True, check=True,
                timeout=seconds * 4 + 90,
            )  # fmt: skip
        with Store(db) as store:
            (info,) = store.list_runs()
            requests = len(store.load_run(info.run_id)[1])
    parts: dict[str, int] = {}
    leaves: dict[str, int] = {}
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        part = _part_of(frames)
        parts[part] = parts.get(part, 0) + int(count)
        leaf = frames[-1].split(":")[0] + ")" if frames else "?"
        leaves[leaf] = leaves.get(leaf, 0) + int(count)
    return requests, parts, leaves


def _part_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, marks in PARTS:
            if any(mark in frame for mark in marks):
                return name
    return "other"


def _per_request(short: Run, long: Run) -> tuple[float, float]:
    """CPU and its system part (ms) a request, start-up out: the long level's less the
    short one's over the difference in requests."""
    more = max(1, long.requests - short.requests)
    return (
        (long.cpu_s - short.cpu_s) / more * 1000,
        (long.system_s - short.system_s) / more * 1000,
    )


def paced_lab(log: Path) -> LabProcess:
    """The lab the load benches measure against: 64 tokens paced at 20 ms after a 20 ms
    prefill, logging when it wrote each token to ``log`` (not started)."""
    latency = LatencyModel(
        prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=DECODE_MS
    )
    return LabProcess(LabConfig(latency=latency, default_max_tokens=TOKENS, write_log=str(log)))


def writes_of(log: Path) -> dict[str, list[int]]:
    """The lab's log: each request's id and when each of its tokens was written."""
    found: dict[str, list[int]] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            row = json.loads(line)
            if row["request_id"]:
                found[row["request_id"]] = row["writes_ns"]
    return found


def _q(values: list[float], q: float) -> float:
    return float(np.quantile(values, q)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=12.0, help="the long level")
    parser.add_argument("--short", type=float, default=4.0, help="the short level")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="pairs of levels run; the CPU a request is their median (a level's CPU varies "
        "a tenth from run to run with how the streams' tokens fall together)",
    )
    parser.add_argument("--extra", default="", help="more arguments for latdoc load")
    parser.add_argument("--profile", action="store_true", help="and where the CPU went")
    parser.add_argument("--profile-out", help="keep the profile's raw stacks in this file")
    parser.add_argument(
        "--client-src", help="run the command from this src directory (another commit's)"
    )
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    lab_core, client_core = cores[-1], cores[0]
    extra = args.extra.split()
    profiled: tuple[int, dict[str, int], dict[str, int]] = (0, {}, {})
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "writes.jsonl"
        server = paced_lab(log)
        with pinned(lab_core):
            server.start()  # the lab's process keeps the core it started on
        try:
            pairs = []
            for _ in range(max(1, args.repeat)):
                short, long = (
                    run_once(server.base_url, args.streams, seconds, client_core, log, extra,
                             args.client_src)
                    for seconds in (args.short, args.seconds)
                )  # fmt: skip
                pairs.append((short, long))
            if args.profile:
                profiled = profile(server.base_url, args.streams, args.seconds, client_core,
                                   Path(args.profile_out or Path(tmp) / "profile.txt"),
                                   args.client_src)  # fmt: skip
        finally:
            server.stop()
    costs = sorted(_per_request(s, lo) for s, lo in pairs)
    per_request, per_request_system = costs[len(costs) // 2]
    spread = (
        f" (median of {len(costs)}: {costs[0][0]:.2f} to {costs[-1][0]:.2f})"
        if len(costs) > 1
        else ""
    )
    itl_read, itl_written = _q(long.read_gaps_ms, 0.99), _q(long.written_gaps_ms, 0.99)
    print(f"latdoc load at {args.streams} streams, {TOKENS} tokens at {DECODE_MS:g} ms, "
          f"client on core {client_core} ({loop_name()} loop), lab on core {lab_core}")  # fmt: skip
    print(f"  requests: {short.requests} in the {args.short:g} s level, "
          f"{long.requests} in the {args.seconds:g} s level")  # fmt: skip
    rows = [
        ("CPU a request, start-up out", f"{per_request:.2f} ms{spread}",
         f"<= {GOAL_CPU_MS} ms", per_request <= GOAL_CPU_MS),
        ("  of which the kernel's (system)", f"{per_request_system:.2f} ms", "", None),
        ("CPU a request, start-up in", f"{long.cpu_s / max(1, long.requests) * 1000:.2f} ms",
         "", None),
        ("client delay p50", f"{_q(long.delay_ms, 0.5):.1f} ms", f"<= {GOAL_DELAY_MS:g} ms",
         _q(long.delay_ms, 0.5) <= GOAL_DELAY_MS),
        ("client delay p99", f"{_q(long.delay_ms, 0.99):.1f} ms", "", None),
        ("ITL p99 read / lab's", f"{itl_read:.1f} / {itl_written:.1f} ms",
         f"within {GOAL_ITL_MS:g} ms", abs(itl_read - itl_written) <= GOAL_ITL_MS),
        ("TTFT less the wire's p50 / p99", f"{_q(long.ttft_errors_ms, 0.5):.2f} / "
         f"{_q(long.ttft_errors_ms, 0.99):.1f} ms", f"p99 <= {GOAL_TTFT_MS:g} ms",
         _q(long.ttft_errors_ms, 0.99) <= GOAL_TTFT_MS),
        ("due-time less send TTFT p50", f"{_q(long.late_ms, 0.5):.2f} ms",
         f"<= {GOAL_LATE_MS:g} ms", _q(long.late_ms, 0.5) <= GOAL_LATE_MS),
        ("per-gap |error| p50 / p99", f"{_q(long.gap_errors_ms, 0.5):.3f} / "
         f"{_q(long.gap_errors_ms, 0.99):.1f} ms", "", None),
        ("merged gaps", f"{long.merged / max(1, long.gaps):.2%} of {long.gaps}", "", None),
        ("read together, latdoc's count",
         "-" if long.read_together is None else f"{long.read_together:.2%}", "", None),
    ]  # fmt: skip
    for name, value, goal, met in rows:
        mark = "" if met is None else ("met" if met else "NOT met")
        print(f"  {name:<30} {value:>22}  {goal:<14} {mark}")
    if args.profile:
        requests, parts, leaves = profiled
        total = sum(parts.values())
        print(f"\n  Where the CPU went (py-spy, {total} samples at 250/s holding the GIL, "
              f"{requests} requests), ms a request:")  # fmt: skip
        for name, count in sorted(parts.items(), key=lambda kv: -kv[1]):
            print(f"    {name:<26} {count / 250 / max(1, requests) * 1000:6.2f}  "
                  f"{count / max(1, total):6.1%}")  # fmt: skip
        print("\n  The 15 functions most often innermost, ms a request:")
        for name, count in sorted(leaves.items(), key=lambda kv: -kv[1])[:15]:
            print(f"    {count / 250 / max(1, requests) * 1000:6.2f}  {name}")


if __name__ == "__main__":
    main()
