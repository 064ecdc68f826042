"""How well the client's account of a request matches the server's own, on real servers.

1. The lab engine (llama.cpp on SmolLM2-135M): prompts of 128, 512 and 1024 tokens,
   one at a time. For each, the client's wait from the response headers to the
   first token over llama.cpp's own ``prompt_ms``; and the engine's ``/metrics``
   prefill counter over the sum of the ``prompt_ms`` it told.
2. The same engine, three requests at once on its one slot: the last one's time to
   first token split into network + client, queue and prefill.
3. Debian's nginx in front of the simulated endpoint, ``proxy_buffering on`` then
   ``off``: events per socket read, arrival span, and the time held back against
   the decode time the endpoint planned.

Each part is skipped with its reason when the engine or nginx is missing.
Run: ``.venv/bin/python bench/server_accounting.py``.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

from latdoc.analysis.buffering import stream_burst
from latdoc.analysis.engine_metrics import engine_delta, parse_exposition
from latdoc.analysis.servertime import split_ttft
from latdoc.lab.sim import LabConfig, LabServer, LatencyModel
from latdoc.probe import Endpoint, ProbeSession
from latdoc.records import RequestTrace
from latdoc.workload import make_prompt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def _send(url: str, model: str, prompts: list[str], max_tokens: int) -> list[RequestTrace]:
    async def go() -> list[RequestTrace]:
        async with ProbeSession(Endpoint(url, model), reuse_connections=False) as session:
            return [await session.request(p, max_tokens) for p in prompts]

    return asyncio.run(go())


def _together(url: str, model: str, prompts: list[str]) -> list[RequestTrace]:
    async def one(prompt: str) -> RequestTrace:
        async with ProbeSession(Endpoint(url, model)) as session:
            return await session.request(prompt, 4)

    async def go() -> list[RequestTrace]:
        return list(await asyncio.gather(*(one(p) for p in prompts)))

    return asyncio.run(go())


def engine_part() -> None:
    try:
        from latdoc.lab.engine import EngineServer, engine_available
    except ImportError:
        print("engine: skipped (the engine module is missing)")
        return
    missing = engine_available()
    if missing is not None:
        print(f"engine: skipped ({missing})")
        return
    rng = random.Random(1)
    with EngineServer(slots=1, ctx_size=4096) as engine:
        metrics = engine.root_url + "/metrics"
        before = parse_exposition(httpx.get(metrics, timeout=10).text)
        prompts = [make_prompt(n, rng) for n in (128, 512, 1024)]
        traces = _send(engine.base_url, engine.model, prompts, 2)
        found = engine_delta(before, parse_exposition(httpx.get(metrics, timeout=10).text))
        told = [t.server_timing["prompt_ms"] for t in traces]
        print("engine: prompt tokens, llama.cpp prompt_ms, client headers→first token, ratio")
        for t, ms in zip(traces, told, strict=True):
            assert t.first_token_ns is not None and t.first_byte_ns is not None
            waited = (t.first_token_ns - t.first_byte_ns) / 1e6
            print(f"  {t.prompt_tokens:5d}  {ms:9.1f} ms  {waited:9.1f} ms  {waited / ms:6.3f}")
        if found is not None and found[1]["prefill_total_ms"] is not None:
            counter = found[1]["prefill_total_ms"]
            print(
                f"engine: /metrics prefill counter {counter:.1f} ms vs sum of prompt_ms "
                f"{sum(told):.1f} ms: ratio {counter / sum(told):.4f}"
            )
        crowd = _together(engine.base_url, engine.model, [make_prompt(200, rng) for _ in range(3)])
        last = max(crowd, key=lambda t: t.first_token_ns or 0)
        split = split_ttft(last)
        if split is not None:
            outside = split.client_ms + split.network_ms
            print(
                f"engine, 3 at once on 1 slot, the last: TTFT {last.ttft_ms:.0f} ms = network + "
                f"client {outside:.1f} ms + queue {split.queue_ms:.0f} ms "
                f"+ prefill {split.prefill_ms:.0f} ms"
            )


def nginx_part() -> None:
    from nginx_proxy import nginx_binary, nginx_proxy

    if nginx_binary() is None:
        print("nginx: skipped (not installed)")
        return
    latency = LatencyModel(
        prefill_base_ms=20.0, prefill_ms_per_token=0.01, decode_ms_per_token=12.0
    )
    config = LabConfig(latency=latency)
    output = 40
    planned = (output - 1) * latency.decode_ms_per_token
    for buffering in (True, False):
        with (
            LabServer(config) as lab,
            tempfile.TemporaryDirectory() as run_dir,
            nginx_proxy(
                lab.base_url.removesuffix("/v1"),
                Path(run_dir),
                buffering=buffering,
                http_version="1.0",
            ) as proxy,
        ):
            traces = _send(proxy + "/v1", config.model, ["hello"] * 5, output)
        per_read = statistics.median(
            len(t.chunks) / len({c.t_ns for c in t.chunks}) for t in traces
        )
        span = statistics.median((t.chunks[-1].t_ns - t.chunks[0].t_ns) / 1e6 for t in traces)
        bursts = [b for t in traces if (b := stream_burst(t)) is not None]
        held = statistics.median(b.held_ms for b in bursts) if bursts else 0.0
        print(
            f"nginx proxy_buffering {'on ' if buffering else 'off'}: {per_read:.1f} events per "
            f"read, arrival span {span:.1f} ms (planned decode {planned:.0f} ms), "
            f"{len(bursts)}/{len(traces)} held back, median {held:.0f} ms"
        )


if __name__ == "__main__":
    engine_part()
    nginx_part()
