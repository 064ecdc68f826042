"""What a slow store adds to an instrumented application's requests: wall time per
request as the application sees it, from ``create()`` to the stream's last chunk.

The application is the real ``openai.AsyncOpenAI`` SDK streaming chat completions,
one request after another, from the simulated endpoint in its own process. Arms,
alternated over several rounds:

- ``plain``: not instrumented;
- ``file store``: instrumented into a store file on this disk;
- ``busy store``: the same, while another connection holds the store's write lock
  90 ms of every 100 ms (a second writer, or a disk that syncs slowly);
- ``busy, inline``: the busy store written on the request path, each trace committed
  before the application sees the end of its stream, as a store without a write
  queue does. It shows what the queue saves.

Every loop is bounded in count. Run: ``.venv/bin/python bench/instrument_slow_store.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import openai

from latdoc import instrument
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.records import RequestTrace, Sample, Step
from latdoc.store import Store

OUTPUT_TOKENS = 16
HOLD_S, GAP_S = 0.09, 0.01
"""The second writer holds the lock this long, then lets go this long."""


@contextmanager
def busy(db: Path, rounds_limit: int = 100_000) -> Iterator[None]:
    """Another connection holding the store's write lock most of the time."""
    stop = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(db, isolation_level=None, timeout=5.0)
        for _ in range(rounds_limit):
            if stop.is_set():
                break
            conn.execute("BEGIN EXCLUSIVE")
            time.sleep(HOLD_S)
            conn.execute("COMMIT")
            time.sleep(GAP_S)
        conn.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)


async def requests(client: openai.AsyncOpenAI, n: int) -> list[float]:
    """Wall seconds of each of ``n`` requests, one after another."""
    took = []
    for _ in range(n):
        t0 = time.perf_counter()
        stream = await client.chat.completions.create(
            model="lab-sim",
            messages=[{"role": "user", "content": "How long does this take?"}],
            max_tokens=OUTPUT_TOKENS,
            stream=True,
        )
        async for _chunk in stream:
            pass
        took.append(time.perf_counter() - t0)
    return took


async def arm(url: str, n: int, mode: str, db: Path) -> tuple[list[float], int, int]:
    """Each request's wall seconds, the requests sent, and the traces the store kept."""
    client = openai.AsyncOpenAI(api_key="sk-bench", base_url=url, max_retries=0, timeout=60.0)
    store = Store(db) if mode != "plain" else None
    handle = instrument(client, store=store) if store is not None else None
    if handle is not None and mode == "busy, inline" and store is not None:
        inline_store, run_id = store, handle.run_id

        def write_now(trace: RequestTrace) -> None:
            with contextlib.suppress(sqlite3.OperationalError):
                inline_store.add_samples(run_id, (Sample(Step.TRAFFIC, trace, None, 1),))

        handle._hooks.append(write_now)
    try:
        await requests(client, 2)
        if mode.startswith("busy"):
            with busy(db):
                took = await requests(client, n)
        else:
            took = await requests(client, n)
    finally:
        if handle is not None:
            handle.close()
        if store is not None:
            store.close()
        await client.close()
    if handle is None:
        return took, n + 2, n + 2
    with Store(db) as kept:
        _, samples, _ = kept.load_run(handle.run_id)
    return took, n + 2, len({s.index for s in samples})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40, help="requests per arm a round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    model = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)
    modes = ("plain", "file store", "busy store", "busy, inline")
    took: dict[str, list[float]] = {m: [] for m in modes}
    sent = dict.fromkeys(modes, 0)
    kept = dict.fromkeys(modes, 0)
    with tempfile.TemporaryDirectory() as tmp, LabProcess(LabConfig(latency=model)) as server:
        for r in range(args.rounds):
            for mode in modes:
                db = Path(tmp) / f"{r}-{mode.replace(' ', '').replace(',', '')}.db"
                values, n_sent, n_kept = asyncio.run(arm(server.base_url, args.requests, mode, db))
                took[mode] += values
                sent[mode] += n_sent
                kept[mode] += n_kept
    base = statistics.median(took["plain"])
    print(
        f"openai SDK, one request at a time, {OUTPUT_TOKENS} tokens each, "
        f"{args.requests} requests per arm × {args.rounds} rounds"
    )
    print(f"{'':>14} {'median ms':>10} {'p95 ms':>8} {'added ms':>9} {'× plain':>8} {'kept':>9}")
    for mode in modes:
        values = np.array(took[mode]) * 1000
        median = float(np.median(values))
        print(
            f"{mode:>14} {median:>10.2f} {np.percentile(values, 95):>8.2f} "
            f"{median - base * 1000:>+9.2f} {median / (base * 1000):>8.3f} "
            f"{kept[mode]:>4}/{sent[mode]:<4}"
        )


if __name__ == "__main__":
    main()
