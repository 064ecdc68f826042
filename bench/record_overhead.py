"""What ``latdoc record`` adds: the gateway's time per piece of body at 64 streams on one
core, read three ways from one run.

The lab runs in a process of its own on one core, pacing 64 tokens at 20 ms, and logs
the moment it wrote each token (``LabConfig.write_log``: the upstream's own account of
its bytes leaving). The real ``latdoc record`` runs as a subprocess pinned to the other
core. The client, the real ``latdoc load`` on the lab's core, keeps 64 streams of
requests going, once straight to the lab and once through the gateway, and stamps each
chunk with the kernel's receive time. Printed:

- the ends' view: each chunk's arrival at the client less the lab's write of it, p50
  and p99, direct and through the gateway; their difference is what the gateway added
  as the two ends saw it (the wire on both sides included);
- the gateway's own view: ``RequestTrace.relay_us`` of the recording, from the read
  that brought each piece from the lab (the kernel's stamp) to its hand-over to the
  client's connection, p50 and p99 (the goal: p99 within 1 ms);
- the share of the lab's writes that came within 0.2 ms of another stream's (its
  event loop writes the tokens that fall due together in one turn, as an engine's
  batch step does): chunks the gateway passes on back to back, the tail's cause;
- the gateway's CPU a call (user + system of its process, start-up included: the
  kernel's account of it as it ends), and its calls kept against those the client
  sent.

The lab's write log stands in for a packet capture on the upstream side and the
client's kernel receive stamps for one on the application's side: each is within
microseconds of the wire on loopback, and neither needs a capture tool.

Bounded: two levels of ``--seconds`` each, the requests capped.
Run: ``.venv/bin/python bench/record_overhead.py [--streams 64] [--seconds 10]``.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from latdoc.store import Store
from load_cost import DECODE_MS, TOKENS, paced_lab, writes_of
from probe_overhead import pinned

GOAL_RELAY_P99_MS = 1.0
_ADDRESS = re.compile(r"(http://127\.0\.0\.1:\d+\S*?):?\s")


def _load(url: str, streams: int, seconds: float, db: Path) -> int:
    """The real ``latdoc load`` against ``url``; the requests it kept."""
    subprocess.run(
        [sys.executable, "-m", "latdoc", "load", url, "-m", "lab-sim",
         "--concurrency", str(streams), "--max-tokens", str(TOKENS),
         "--duration-per-level", f"{seconds:g}", "--max-requests", "100000",
         "--max-seconds", str(seconds * 4 + 30), "--db", str(db), "--json"],
        capture_output=True, check=True, timeout=seconds * 4 + 60,
    )  # fmt: skip
    with Store(db) as store:
        (info,) = store.list_runs()
        return len(store.load_run(info.run_id)[1])


def _chunk_lags(db: Path, written: dict[str, list[int]]) -> list[float]:
    """Each chunk's arrival at the client less the lab's write of it (ms), for the
    requests whose chunks match the lab's writes one to one."""
    lags: list[float] = []
    with Store(db) as store:
        (info,) = store.list_runs()
        _, samples, _ = store.load_run(info.run_id)
    for sample in samples:
        trace = sample.trace
        writes = written.get(trace.request_id or "")
        if not trace.ok or writes is None or len(writes) != len(trace.chunks):
            continue
        arrived = np.asarray([trace.t0_ns + c.t_ns for c in trace.chunks], dtype=np.int64)
        lags.extend(((arrived - np.asarray(writes, dtype=np.int64)) / 1e6).tolist())
    return lags


def _together(written: dict[str, list[int]], within_us: float = 200.0) -> float:
    """The share of the lab's writes that came within ``within_us`` of another
    stream's write before them: chunks the gateway must pass on back to back."""
    writes = np.sort(np.concatenate([np.asarray(w, dtype=np.int64) for w in written.values()]))
    if writes.size < 2:
        return 0.0
    return float(np.mean(np.diff(writes) < within_us * 1000))


def _q(values: list[float], q: float) -> float:
    return float(np.quantile(values, q)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    lab_core, gateway_core = cores[-1], cores[0]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "writes.jsonl"
        server = paced_lab(log)
        with pinned(lab_core):
            server.start()
        try:
            with pinned(lab_core):
                direct_n = _load(server.base_url, args.streams, args.seconds,
                                 Path(tmp) / "direct.db")  # fmt: skip
            time.sleep(0.5)
            direct = _chunk_lags(Path(tmp) / "direct.db", writes_of(log))
            recording_db = Path(tmp) / "recording.db"
            with pinned(gateway_core):
                gateway = subprocess.Popen(
                    [sys.executable, "-m", "latdoc", "record", "--upstream", server.base_url,
                     "--listen", "127.0.0.1:0", "--db", str(recording_db), "--quiet"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                )  # fmt: skip
            assert gateway.stderr is not None
            address = None
            for line in gateway.stderr:
                found = _ADDRESS.search(line)
                if found:
                    address = found.group(1)
                    break
            if address is None:
                raise SystemExit("latdoc record did not start")
            try:
                with pinned(lab_core):
                    through_n = _load(address, args.streams, args.seconds,
                                      Path(tmp) / "through.db")  # fmt: skip
            finally:
                gateway.send_signal(signal.SIGINT)
                # The gateway's own account, apart from the clients the bench ran.
                _, _, usage = os.wait4(gateway.pid, 0)
                gateway.returncode = 0
                gateway.communicate(timeout=60)
            time.sleep(0.5)
            through = _chunk_lags(Path(tmp) / "through.db", writes_of(log))
            together = _together(writes_of(log))
            with Store(recording_db) as store:
                (info,) = store.list_runs()
                _, kept, _ = store.load_run(info.run_id)
        finally:
            server.stop()
    relay = [us / 1000 for s in kept for us in s.trace.relay_us]
    cpu = usage.ru_utime + usage.ru_stime
    print(f"latdoc record at {args.streams} streams, {TOKENS} tokens at {DECODE_MS:g} ms, "
          f"gateway on core {gateway_core}, lab and client on core {lab_core}")  # fmt: skip
    print(f"  calls: {direct_n} direct, {through_n} through the gateway, {len(kept)} kept")

    def pair(values: list[float]) -> str:
        return f"{_q(values, 0.5):.3f} / {_q(values, 0.99):.3f} ms"

    added = (_q(through, 0.5) - _q(direct, 0.5), _q(through, 0.99) - _q(direct, 0.99))
    rows = [
        ("client less lab, direct p50 / p99", pair(direct)),
        ("client less lab, through p50 / p99", pair(through)),
        ("added, as the ends saw it p50 / p99", f"{added[0]:.3f} / {added[1]:.3f} ms"),
        ("the gateway's own p50 / p99", pair(relay)),
        ("the gateway's CPU a call", f"{cpu / max(1, len(kept)) * 1000:.2f} ms"),
        ("lab's writes within 0.2 ms of another's", f"{together:.0%}"),
    ]
    for name, value in rows:
        print(f"  {name:<38} {value:>22}")
    met = _q(relay, 0.99) <= GOAL_RELAY_P99_MS
    verdict = "met" if met else "NOT met"
    print(f"  goal: the gateway's p99 within {GOAL_RELAY_P99_MS:g} ms a piece: {verdict} "
          f"({len(relay)} pieces, {len(through)} chunks matched)")  # fmt: skip


if __name__ == "__main__":
    main()
