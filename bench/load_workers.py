"""One process against two workers: CPU per request and TTFT error at 512 streams.

``latdoc load`` sends one closed-loop level of 512 streams at the lab, three ways:
from this process alone, from 2 local worker processes × 256 streams
(``--processes 2``) and, when Ray is installed, from 2 Ray actors × 256 streams on
a local Ray cluster (``--ray``; the cluster starts first and is stopped after).
The lab runs in its own process and stamps every chunk with the moment it wrote it
(``perf_counter_ns``, one clock for every process on Linux). A picklable event
hook in every worker keeps each request's chunk stamps beside its own arrival
stamps, so the probe's errors are computed by ``bench/probe_overhead.py``'s own
``errors_of``:

- user TTFT error: TTFT from the request's start, the first token stamped when the
  loop handed it over, minus the truth (the lab's write of the first token minus the
  moment the request went to the kernel);
- wire TTFT error: ``server_ttft_ms`` (from ``sent`` to the kernel's receive stamp)
  minus the same truth;
- both over the requests on reused connections (a stream's first request opens its
  connection, as probe_overhead's warm-up round does);
- CPU per request: this process's CPU plus the workers' (local processes: their
  CPU once joined; Ray actors: their ``/proc`` CPU, read until they end), per request,
  start-up of the workers included;
- the driver's CPU per trace: this process's own, alone. With workers that is what
  merging costs the driver: receiving each batch, moving each trace onto its clocks
  and keeping it in the store, the figure that bounds how many traces a second one
  driver can take from a fleet.

The lab shares the machine's cores with the client, so on a small machine it is
part of what is measured: read the columns against each other, from one run.

Bounded: one level of ``--seconds`` per way, requests capped. Run:
``.venv/bin/python bench/load_workers.py`` (under a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import latdoc
from latdoc.analysis.stats import Distribution
from latdoc.features.load import LoadPlan, LoadRun, Workers, load_endpoint
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.probe import Endpoint
from latdoc.store import Store
from probe_overhead import Observed, errors_of

ITL_MS = 50.0
OUTPUT_TOKENS = 32
_TICKS = os.sysconf("SC_CLK_TCK")


class StampFile:
    """An event hook that appends each finished request's stamps to a file of its
    process: ``response_id`` then the lab's, the kernel's and the loop's stamp of each
    content chunk, as ``bench/probe_overhead.py``'s :class:`Observed` collects them."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._open: dict[str, Observed] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"directory": self.directory, "_open": {}}

    def __call__(self, obj: Any, t_ns: int) -> None:
        if not isinstance(obj, dict) or "id" not in obj:
            return
        seen = self._open.setdefault(obj["id"], Observed(trace=None))  # type: ignore[arg-type]
        seen(obj, t_ns)
        choices = obj.get("choices") or [{}]
        if choices[0].get("finish_reason") is not None:
            del self._open[obj["id"]]
            lists = (seen.server_ns, seen.kernel_ns, seen.loop_ns)
            line = " ".join([obj["id"], *(",".join(map(str, v)) for v in lists)])
            with open(Path(self.directory, f"{os.getpid()}.txt"), "a") as f:
                f.write(line + "\n")


def read_stamps(directory: str) -> dict[str, tuple[list[int], list[int], list[int]]]:
    found = {}
    for path in Path(directory).glob("*.txt"):
        for line in path.read_text().splitlines():
            rid, *lists = [*line.split(" "), "", "", ""][:4]
            server, kernel, loop = ([int(x) for x in v.split(",") if x] for v in lists)
            found[rid] = (server, kernel, loop)
    return found


def proc_cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


@contextmanager
def actor_cpu(db: Path) -> Iterator[Callable[[], float]]:
    """The Ray actors' CPU seconds, read from /proc (by the pids the run records) until
    they end."""
    last: dict[int, float] = {}
    stop = threading.Event()

    def poll() -> None:
        import json
        import sqlite3

        pids: list[int] = []
        while not stop.is_set():
            if not pids and db.exists():
                with sqlite3.connect(db) as conn:
                    try:
                        row = conn.execute("SELECT meta FROM runs").fetchone()
                    except sqlite3.OperationalError:
                        row = None
                if row is not None:
                    pids = [m["pid"] for m in json.loads(row[0])["workers"]["members"]]
            for pid in pids:
                cpu = proc_cpu_s(pid)
                if cpu is not None:
                    last[pid] = cpu
            stop.wait(0.1)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield lambda: sum(last.values())
    finally:
        stop.set()
        thread.join()


def one_way(
    url: str, streams: int, seconds: float, workers: Workers | None, db: Path
) -> tuple[LoadRun, float, float, list[Observed]]:
    with tempfile.TemporaryDirectory(prefix="ldstamps-") as stamps_dir:
        plan = LoadPlan(
            Endpoint(url, "lab-sim"),
            concurrency=(streams,),
            duration_per_level=seconds,
            max_tokens=OUTPUT_TOKENS,
            max_requests=100_000,
            max_seconds=seconds + 60,
            seed=1,
            on_event=StampFile(stamps_dir),
        )
        before = os.times()
        with Store(db) as store:
            if workers is not None and workers.ray is not None:
                with actor_cpu(db) as actors:
                    run = load_endpoint(plan, store=store, workers=workers)
                    time.sleep(0.3)
                    extra = actors()
            else:
                run = load_endpoint(plan, store=store, workers=workers)
                extra = 0.0
        after = os.times()
        cpu = sum(after[:4]) - sum(before[:4]) + extra
        driver = sum(after[:2]) - sum(before[:2])
        stamps = read_stamps(stamps_dir)
    # As probe_overhead leaves its warm-up round out: a stream's first request opens
    # its connection, which is not the probe's timing error.
    observed = [
        Observed(s.trace, *stamps[s.trace.response_id])
        for s in run.samples
        if s.trace.response_id in stamps and not s.trace.new_connection
    ]
    return run, cpu, driver, observed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=512)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--itl-ms", type=float, default=ITL_MS, help="the lab's token gap")
    parser.add_argument("--no-ray", action="store_true", help="leave the Ray way out")
    args = parser.parse_args()
    model = LatencyModel(
        prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=args.itl_ms
    )
    ways: list[tuple[str, Workers | None]] = [
        ("1 process", None),
        ("2 processes", Workers(2)),
    ]
    cluster: Any = None
    if not args.no_ray:
        try:
            import ray  # noqa: F401

            from latdoc.lab.raycluster import LocalRayCluster, RayNode

            source = str(Path(latdoc.__file__).resolve().parents[1])
            cluster = LocalRayCluster((RayNode(2),), env={"PYTHONPATH": source})
            cluster.start()
            ways.append(("2 Ray actors", Workers(2, ray=cluster.address)))
        except ImportError:
            print("Ray is not installed: the Ray way is left out")
    print(f"load of {args.streams} streams for {args.seconds:g} s against the lab "
          f"(ITL {args.itl_ms:g} ms, {OUTPUT_TOKENS} tokens), {os.cpu_count()} cores")  # fmt: skip
    print(f"{'':<14} {'':>9} {'':>7} {'':>11} {'':>14} {'user TTFT error':>21} "
          f"{'wire TTFT error':>21}")  # fmt: skip
    print(f"{'sent from':<14} {'requests':>9} {'sent/s':>7} {'CPU ms/req':>11} "
          f"{'driver ms/req':>14} {'p50':>10} {'p99':>10} {'p50':>10} {'p99':>10}")  # fmt: skip
    try:
        with (
            LabProcess(LabConfig(latency=model, stamp_chunks=True)) as server,
            tempfile.TemporaryDirectory(prefix="ldbench-") as tmp,
        ):
            for k, (name, workers) in enumerate(ways):
                db = Path(tmp, f"{k}.db")
                run, cpu, driver, observed = one_way(
                    server.base_url, args.streams, args.seconds, workers, db
                )
                errors = errors_of(observed)
                user, wire = Distribution.of(errors.user_ttft), Distribution.of(errors.wire_ttft)
                n = len(run.samples)
                (level,) = run.analysis.levels
                print(
                    f"{name:<14} {n:>9} {level.sent_per_s:>7.0f} "
                    f"{cpu / max(n, 1) * 1000:>11.2f} {driver / max(n, 1) * 1000:>14.2f} "
                    f"{_ms(user, 'p50'):>10} {_ms(user, 'p99'):>10} "
                    f"{_ms(wire, 'p50'):>10} {_ms(wire, 'p99'):>10}"
                    + (f"   ({errors.failed} without stamps)" if errors.failed else "")
                )
    finally:
        if cluster is not None:
            cluster.stop()


def _ms(d: Distribution | None, which: str) -> str:
    return "-" if d is None else f"{getattr(d, which):.2f} ms"


if __name__ == "__main__":
    main()
