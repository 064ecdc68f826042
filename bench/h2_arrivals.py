"""Chunk arrivals on one HTTP/2 connection shared by many streams: each frame's own read
against the connection's last read.

On HTTP/2 one stream's task may read the socket for the others, and a stream's task
takes its frames when it next runs. The probe stamps each chunk with the read that
brought its DATA frame; the alternative, the connection's last read when the chunk
is handed over, is recorded beside it in the same run (the bench wraps the stream's
method to note it). Both are compared with the simulated endpoint's own stamp of
each chunk (``lab_t_ns``, CLOCK_MONOTONIC, shared by processes on Linux). Per level
of streams: how late each stamp is, p50 and p99 in ms, and the ratio of the medians.

Every loop is bounded in count (``--requests`` per stream) and every level in time.
Run: ``.venv/bin/python bench/h2_arrivals.py [--levels 8,32,64]``.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from latdoc.analysis.stats import Distribution
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.probe import Endpoint, ProbeSession
from latdoc.probe._backend import TimedStream

ITL_MS = 5.0
OUTPUT_TOKENS = 32


class Lateness:
    """Per content chunk, how late each stamp is against the lab's, in ms."""

    def __init__(self) -> None:
        self.frame: list[float] = []
        self.last_read: list[float] = []
        self.handed: dict[asyncio.Task[Any] | None, int | None] = {}

    def hook(self, obj: Any, t_ns: int) -> None:
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if not choices or not (choices[0].get("delta") or {}).get("content"):
            return
        last = self.handed.get(asyncio.current_task())
        self.frame.append((t_ns - obj["lab_t_ns"]) / 1e6)
        if last is not None:
            self.last_read.append((last - obj["lab_t_ns"]) / 1e6)


async def run_level(
    url: str, ca_file: str, streams: int, requests: int, timeout_s: float
) -> Lateness:
    seen = Lateness()
    frame_arrival = TimedStream.data_arrival

    def noted(self: TimedStream, stream_id: int | None) -> int | None:
        seen.handed[asyncio.current_task()] = self.last_read_ns
        return frame_arrival(self, stream_id)

    TimedStream.data_arrival = noted  # type: ignore[method-assign]
    try:
        async with (
            asyncio.timeout(timeout_s),
            ProbeSession(Endpoint(url, "lab-sim"), http2=True, cacert=ca_file) as session,
        ):
            await session.request("hi", 2)
            for _ in range(requests):
                await asyncio.gather(
                    *(
                        session.request("Tell me about the sea", OUTPUT_TOKENS, on_event=seen.hook)
                        for _ in range(streams)
                    )
                )
    except TimeoutError:
        pass
    finally:
        TimedStream.data_arrival = frame_arrival  # type: ignore[method-assign]
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--levels", default="8,32,64")
    parser.add_argument("--requests", type=int, default=3, help="rounds of requests per level")
    parser.add_argument("--level-timeout", type=float, default=30.0, help="seconds per level")
    args = parser.parse_args()
    model = LatencyModel(prefill_base_ms=10.0, prefill_ms_per_token=0.0, decode_ms_per_token=ITL_MS)
    with LabProcess(LabConfig(latency=model, stamp_chunks=True), tls=True, http2=True) as lab:
        assert lab.ca_file is not None
        print(
            f"HTTP/2, every stream on one TLS connection; ITL {ITL_MS:g} ms, {OUTPUT_TOKENS} "
            "tokens; stamp minus the lab's stamp, ms"
        )
        print(
            f"{'streams':>7} {'chunks':>7} {'own frame p50 / p99':>20} "
            f"{'last read p50 / p99':>20} {'p50 ratio':>9}"
        )
        for streams in (int(x) for x in args.levels.split(",")):
            seen = asyncio.run(
                run_level(lab.base_url, lab.ca_file, streams, args.requests, args.level_timeout)
            )
            own, last = Distribution.of(seen.frame), Distribution.of(seen.last_read)
            if own is None or last is None:
                print(f"{streams:>7} {len(seen.frame):>7}  nothing measured")
                continue
            ratio = last.p50 / own.p50 if own.p50 > 0 else float("inf")
            print(
                f"{streams:>7} {len(seen.frame):>7} {f'{own.p50:.2f} / {own.p99:.2f}':>20} "
                f"{f'{last.p50:.2f} / {last.p99:.2f}':>20} {ratio:>8.1f}×"
            )


if __name__ == "__main__":
    main()
