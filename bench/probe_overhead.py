"""The probe's own overhead: how wrong, and at what CPU cost, it times each request.

The simulated endpoint runs in its own process and stamps every chunk with the
moment it wrote it (``lab_t_ns``, ``perf_counter_ns``: CLOCK_MONOTONIC, shared by
processes on Linux). The client runs pinned to one core, the endpoint to another
(where the machine has two), and at each level every stream sends requests back
to back over its own reused connection (one warm-up request per stream, then the
measured ones). Per level:

- client CPU per request (``time.process_time`` of this process only);
- the client's own delay before each request left (``client_delay_ms``);
- TTFT error against the wire: the truth is the lab's stamp of the first token
  minus the moment the request was handed to the kernel (``write_start``, stamped
  next to the write call; on loopback the request is at the server's socket within
  microseconds). "user" is the old reading, TTFT from the request's start with the
  first token stamped when the loop ran its read; "wire" is ``server_ttft_ms``,
  from ``sent`` to the kernel's receive stamp;
- ITL error p99: the size of (measured gap minus the lab's gap), for loop-stamped
  and for kernel-stamped arrivals;
- merged: the share of content chunks that arrived in the same read as the one
  before although the lab wrote them more than 1 ms apart. When nothing reads a
  socket for longer than a chunk gap the kernel merges the segments and keeps
  only the last one's stamp, so a merged chunk's arrival is known only to be no
  later than its stamp.

Every loop is bounded in count, every level in time (``--level-timeout``).
Run: ``make bench`` or ``.venv/bin/python bench/probe_overhead.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from latdoc.analysis.stats import Distribution
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.probe import Endpoint, ProbeSession
from latdoc.records import RequestTrace

ITL_MS = 20.0
PREFILL_MS = 20.0
OUTPUT_TOKENS = 32
PROMPT = "Measure the probe's own overhead, please."
CLIENT_CORE, LAB_CORE = 0, 1


@dataclass
class Observed:
    """One request: its trace, and per content chunk the lab's write, the kernel's
    arrival (the trace's stamp) and the loop's (when the event was handed over)."""

    trace: RequestTrace
    server_ns: list[int] = field(default_factory=list)
    kernel_ns: list[int] = field(default_factory=list)
    loop_ns: list[int] = field(default_factory=list)

    def __call__(self, obj: Any, t_ns: int) -> None:
        if not isinstance(obj, dict) or "lab_t_ns" not in obj or not obj.get("choices"):
            return
        delta = obj["choices"][0].get("delta") or {}
        if delta.get("content"):
            self.loop_ns.append(time.perf_counter_ns())
            self.server_ns.append(obj["lab_t_ns"])
            self.kernel_ns.append(t_ns)


async def one_stream(session: ProbeSession, requests: int, sink: list[Observed] | None) -> None:
    for _ in range(requests):
        seen = Observed(trace=None)  # type: ignore[arg-type]
        seen.trace = await session.request(PROMPT, OUTPUT_TOKENS, on_event=seen)
        if sink is not None:
            sink.append(seen)


async def run_level(
    url: str, streams: int, requests: int, timeout_s: float
) -> tuple[list[Observed], float]:
    """The level's measured requests and the client's CPU seconds per measured request
    (the warm-up round, which opens the connections, is not counted)."""
    sink: list[Observed] = []
    sessions = [ProbeSession(Endpoint(url, "lab-sim"), max_connections=1) for _ in range(streams)]
    for s in sessions:
        await s.__aenter__()
    cpu = 0.0
    try:
        async with asyncio.timeout(timeout_s):
            await asyncio.gather(*(one_stream(s, 1, None) for s in sessions))
            cpu0 = time.process_time()
            try:
                await asyncio.gather(*(one_stream(s, requests, sink) for s in sessions))
            finally:
                cpu = time.process_time() - cpu0
    except TimeoutError:
        pass
    finally:
        for s in sessions:
            await s.aclose()
    return sink, cpu / max(1, len(sink))


@dataclass
class Errors:
    user_ttft: list[float] = field(default_factory=list)
    wire_ttft: list[float] = field(default_factory=list)
    loop_itl: list[float] = field(default_factory=list)
    kernel_itl: list[float] = field(default_factory=list)
    client_delay: list[float] = field(default_factory=list)
    merged: int = 0
    chunks: int = 0
    failed: int = 0


def errors_of(observed: Sequence[Observed]) -> Errors:
    out = Errors()
    for o in observed:
        t = o.trace
        if (
            t.error is not None
            or not o.server_ns
            or len(o.server_ns) != len(t.chunks)
            or t.write_start_ns is None
            or t.server_ttft_ms is None
            or t.client_delay_ms is None
        ):
            out.failed += 1
            continue
        wire_start = t.t0_ns + t.write_start_ns
        truth_ms = (o.server_ns[0] - wire_start) / 1e6
        out.user_ttft.append((o.loop_ns[0] - t.t0_ns) / 1e6 - truth_ms)
        out.wire_ttft.append(t.server_ttft_ms - truth_ms)
        out.client_delay.append(t.client_delay_ms)
        for k in range(1, len(o.server_ns)):
            true_gap = o.server_ns[k] - o.server_ns[k - 1]
            out.loop_itl.append(abs(o.loop_ns[k] - o.loop_ns[k - 1] - true_gap) / 1e6)
            out.kernel_itl.append(abs(o.kernel_ns[k] - o.kernel_ns[k - 1] - true_gap) / 1e6)
            out.merged += o.kernel_ns[k] == o.kernel_ns[k - 1] and true_gap > 1_000_000
        out.chunks += len(o.server_ns) - 1
    return out


@contextlib.contextmanager
def pinned(core: int) -> Iterator[bool]:
    """This process (and what it starts meanwhile) on ``core``; False where it cannot be."""
    if not hasattr(os, "sched_setaffinity") or core not in os.sched_getaffinity(0):
        yield False
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        yield True
    finally:
        os.sched_setaffinity(0, before)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--levels", default="1,64,256,1000")
    parser.add_argument("--requests", type=int, default=2, help="measured requests per stream")
    parser.add_argument("--level-timeout", type=float, default=40.0, help="seconds per level")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    model = LatencyModel(
        prefill_base_ms=PREFILL_MS, prefill_ms_per_token=0.0, decode_ms_per_token=ITL_MS
    )
    with pinned(LAB_CORE) as lab_pinned:
        server = LabProcess(LabConfig(latency=model, stamp_chunks=True))
        server.start()
    try:
        with pinned(CLIENT_CORE) as client_pinned:
            pins = "client on core 0, lab on core 1" if lab_pinned and client_pinned else "unpinned"
            print(
                f"probe timing vs the lab's own chunk stamps ({pins}); prefill {PREFILL_MS:g} ms, "
                f"ITL {ITL_MS:g} ms, {OUTPUT_TOKENS} tokens, {args.requests} measured per stream"
            )
            print(
                f"{'streams':>7} {'reqs':>5} {'CPU/req':>8} {'client delay':>15} "
                f"{'TTFT err user':>15} {'TTFT err wire':>15} {'|ITL err| p99':>15} {'merged':>7}"
            )
            print(
                f"{'':>7} {'':>5} {'ms':>8} {'p50 / p99':>15} {'p50 / p99':>15} "
                f"{'p50 / p99':>15} {'loop / kernel':>15}"
            )
            for level in levels:
                observed, cpu = asyncio.run(
                    run_level(server.base_url, level, args.requests, args.level_timeout)
                )
                e = errors_of(observed)
                note = f"   ({e.failed} unusable)" if e.failed else ""
                if len(observed) < level * args.requests:
                    note += f"   (timed out: {len(observed)} of {level * args.requests})"
                print(
                    f"{level:>7} {len(observed):>5} {cpu * 1000:>8.2f} "
                    f"{_pair(e.client_delay):>15} {_pair(e.user_ttft):>15} "
                    f"{_pair(e.wire_ttft):>15} "
                    f"{_p99(e.loop_itl):>7} / {_p99(e.kernel_itl):<5} "
                    f"{e.merged / max(1, e.chunks):>7.0%}{note}"
                )
    finally:
        server.stop()


def _pair(values: list[float]) -> str:
    d = Distribution.of(values)
    return "-" if d is None else f"{d.p50:.2f} / {d.p99:.2f}"


def _p99(values: list[float]) -> str:
    d = Distribution.of(values)
    return "-" if d is None else f"{d.p99:.2f}"


if __name__ == "__main__":
    main()
