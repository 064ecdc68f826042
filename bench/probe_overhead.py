"""The probe's own overhead: how late, and at what CPU cost, it sees each token.

The simulated endpoint runs in its own process and stamps every chunk with the
moment it wrote it (``perf_counter_ns``, CLOCK_MONOTONIC, shared by processes on
Linux). For each chunk the probe's arrival stamp is compared with the server's:

- ITL error: measured inter-token gap minus the server's actual gap;
- TTFT error: measured time to first token minus the server's write of it,
  both from the client's request start;
- client CPU seconds per request (``time.process_time`` of this process only).

At 1, 16, 64 and 256 concurrent streams over reused connections (one warm-up
request per stream, then the measured ones). Every loop is bounded in count.
Run: ``make bench`` or ``.venv/bin/python bench/probe_overhead.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass
from typing import Any

from latdoc.analysis.stats import Distribution
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.probe import Endpoint, ProbeSession
from latdoc.records import RequestTrace

ITL_MS = 20.0
OUTPUT_TOKENS = 32
PROMPT = "Measure the probe's own overhead, please."


@dataclass
class Observed:
    trace: RequestTrace
    server_ns: list[int]
    client_ns: list[int]


class ContentStamps:
    """Collects (server write, client arrival) of each content chunk of one request."""

    def __init__(self) -> None:
        self.server_ns: list[int] = []
        self.client_ns: list[int] = []

    def __call__(self, obj: Any, t_ns: int) -> None:
        if not isinstance(obj, dict) or "lab_t_ns" not in obj or not obj.get("choices"):
            return
        delta = obj["choices"][0].get("delta") or {}
        if delta.get("content"):
            self.server_ns.append(obj["lab_t_ns"])
            self.client_ns.append(t_ns)


async def one_stream(session: ProbeSession, requests: int, sink: list[Observed]) -> None:
    for index in range(requests + 1):
        stamps = ContentStamps()
        trace = await session.request(PROMPT, OUTPUT_TOKENS, on_event=stamps)
        if index > 0:
            sink.append(Observed(trace, stamps.server_ns, stamps.client_ns))


async def run_level(url: str, concurrency: int, requests: int) -> tuple[list[Observed], float]:
    sink: list[Observed] = []
    sessions = [
        ProbeSession(Endpoint(url, "lab-sim"), max_connections=1) for _ in range(concurrency)
    ]
    for s in sessions:
        await s.__aenter__()
    cpu0 = time.process_time()
    try:
        await asyncio.gather(*(one_stream(s, requests, sink) for s in sessions))
    finally:
        cpu = time.process_time() - cpu0
        for s in sessions:
            await s.aclose()
    return sink, cpu / max(1, concurrency * (requests + 1))


def summarize(observed: list[Observed]) -> tuple[Distribution | None, Distribution | None, int]:
    itl_err: list[float] = []
    ttft_err: list[float] = []
    failed = 0
    for o in observed:
        t = o.trace
        if t.error is not None or len(o.server_ns) != len(t.chunks) or not t.chunks:
            failed += 1
            continue
        for k in range(1, len(o.server_ns)):
            measured = o.client_ns[k] - o.client_ns[k - 1]
            true = o.server_ns[k] - o.server_ns[k - 1]
            itl_err.append((measured - true) / 1e6)
        ttft_err.append((o.client_ns[0] - o.server_ns[0]) / 1e6)
    return Distribution.of(itl_err), Distribution.of(ttft_err), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,16,64,256")
    parser.add_argument("--requests", type=int, default=3, help="measured requests per stream")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    model = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=ITL_MS)
    with LabProcess(LabConfig(latency=model, stamp_chunks=True)) as server:
        url = server.base_url
        print(f"probe overhead vs the lab's own chunk stamps; ITL {ITL_MS:g} ms, "
              f"{OUTPUT_TOKENS} tokens per request")  # fmt: skip
        print(f"{'streams':>8} {'requests':>9} {'ITL err p50':>12} {'ITL err p99':>12} "
              f"{'TTFT err p50':>13} {'TTFT err p99':>13} {'CPU ms/req':>11}")  # fmt: skip
        base_cpu = None
        for level in levels:
            observed, cpu_per_request = asyncio.run(run_level(url, level, args.requests))
            itl, ttft, failed = summarize(observed)
            base_cpu = base_cpu or cpu_per_request
            print(
                f"{level:>8} {len(observed):>9} "
                f"{_ms(itl.p50 if itl else None):>12} {_ms(itl.p99 if itl else None):>12} "
                f"{_ms(ttft.p50 if ttft else None):>13} {_ms(ttft.p99 if ttft else None):>13} "
                f"{cpu_per_request * 1000:>11.2f}"
                + (f"   ({failed} failed)" if failed else "")
                + f"   CPU ×{cpu_per_request / base_cpu:.2f} of 1 stream"
            )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} ms"


if __name__ == "__main__":
    main()
