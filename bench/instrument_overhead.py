"""What ``latdoc.instrument`` costs an application: client CPU per request, with and without.

The application is the real ``openai.AsyncOpenAI`` SDK streaming chat completions
from the simulated endpoint in its own process, at 64 concurrent streams over one
client (its pool reuses connections). The same traffic runs plain, then
instrumented into an in-memory store, alternating, each arm several times; CPU is
``time.process_time`` of this process only, so the server's work is not counted.
Every loop is bounded in count.
Run: ``.venv/bin/python bench/instrument_overhead.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import openai

from latdoc import instrument
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.store import Store

OUTPUT_TOKENS = 32
ITL_MS = 5.0


async def one_stream(client: openai.AsyncOpenAI, requests: int) -> None:
    for _ in range(requests):
        stream = await client.chat.completions.create(
            model="lab-sim",
            messages=[{"role": "user", "content": "How long does this take?"}],
            max_tokens=OUTPUT_TOKENS,
            stream=True,
            stream_options={"include_usage": True},
        )
        async for _chunk in stream:
            pass


async def arm(url: str, streams: int, requests: int, timed: bool) -> float:
    """CPU seconds per request of one arm (after one warm-up request per stream)."""
    client = openai.AsyncOpenAI(
        api_key="sk-bench", base_url=url, max_retries=0, timeout=120.0,
    )  # fmt: skip
    store = Store(":memory:")
    handle = instrument(client, store=store) if timed else None
    try:
        await asyncio.gather(*(one_stream(client, 1) for _ in range(streams)))
        cpu0 = time.process_time()
        await asyncio.gather(*(one_stream(client, requests) for _ in range(streams)))
        cpu = time.process_time() - cpu0
    finally:
        if handle is not None:
            handle.close()
        store.close()
        await client.close()
    return cpu / (streams * requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--requests", type=int, default=5, help="measured requests per stream")
    parser.add_argument("--rounds", type=int, default=3, help="plain/instrumented pairs")
    args = parser.parse_args()
    model = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=ITL_MS)
    plain: list[float] = []
    timed: list[float] = []
    with LabProcess(LabConfig(latency=model)) as server:
        for _ in range(args.rounds):
            plain.append(asyncio.run(arm(server.base_url, args.streams, args.requests, False)))
            timed.append(asyncio.run(arm(server.base_url, args.streams, args.requests, True)))
    p, t = statistics.median(plain), statistics.median(timed)
    per_arm = args.streams * args.requests
    print(f"openai SDK, {args.streams} concurrent streams, {OUTPUT_TOKENS} tokens per request, "
          f"{per_arm} requests per arm, {args.rounds} rounds (medians)")  # fmt: skip
    print(f"{'':>14} {'CPU ms/req':>11}")
    print(f"{'plain':>14} {p * 1000:>11.3f}")
    print(f"{'instrumented':>14} {t * 1000:>11.3f}")
    print(f"overhead: {(t - p) * 1000:+.3f} ms CPU per request ({t / p:.2f}× plain)")


if __name__ == "__main__":
    main()
