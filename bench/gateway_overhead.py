"""What a gateway adds, measured three ways, through a real LiteLLM proxy on loopback.

The lab serves a fixed prefill; LiteLLM's proxy stands in front of it and holds every
request a known time in a pre-call hook (0 ms: the proxy's own cost alone). For each
hold it prints the medians over a few seconds of sequential requests: the gateway's own
header (``x-litellm-overhead-duration-ms``, as the server record reads it), the direct
route (TTFT through the gateway less TTFT to the lab direct), the lab's own timing (the
first token's wait beyond the network, the client and the prefill the lab told), and
``latdoc verify --remedy endpoint``'s measured gain, with the header's error against the
direct route. It also prints what the gateway adds per token after the first, which no
header tells.

Needs LiteLLM's proxy: ``make .venv-litellm/.installed``.

Run: ``.venv/bin/python bench/gateway_overhead.py [--holds 0 20 80 200] [--requests 15]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from latdoc.analysis.servertime import server_timing_of, split_ttft
from latdoc.features.verify import VerifyPlan, VerifyRemedy, verify_remedy
from latdoc.features.verify.experiments.endpoint import EndpointOptions
from latdoc.lab.sim import LabConfig, LabServer, LatencyModel
from latdoc.probe import ConnectionOptions, Endpoint, ProbeSession
from latdoc.records import RequestTrace
from latdoc.store import Store
from litellm_gateway import MASTER_KEY, litellm_executable, litellm_gateway

LATENCY = LatencyModel(prefill_base_ms=30.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)
MODEL = "lab-sim"
TOKENS = 16


def _send(url: str, n: int) -> list[RequestTrace]:
    async def go() -> list[RequestTrace]:
        async with ProbeSession(Endpoint(url, MODEL, api_key=MASTER_KEY)) as session:
            return [await session.request("hello", TOKENS) for _ in range(n + 1)]

    return asyncio.run(go())[1:]


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holds", type=float, nargs="+", default=[0.0, 20.0, 80.0, 200.0])
    parser.add_argument("--requests", type=int, default=15)
    args = parser.parse_args()
    executable = litellm_executable()
    if executable is None:
        print("skipped: LiteLLM's proxy is not installed (make .venv-litellm/.installed)")
        return
    print(
        "hold ms | header ms | direct route ms | lab timing ms | verify gain ms | "
        "header vs route | per-token ms added"
    )
    with LabServer(LabConfig(latency=LATENCY)) as lab:
        for hold in args.holds:
            workdir = Path(tempfile.mkdtemp(prefix="latdoc-gateway-"))
            with litellm_gateway(executable, lab.base_url, MODEL, workdir, hold) as gateway:
                through = _send(gateway.base_url, args.requests)
                direct = _send(lab.base_url, args.requests)
                plan = VerifyPlan(
                    endpoint=Endpoint(gateway.base_url, MODEL, api_key=MASTER_KEY),
                    remedy=VerifyRemedy.ENDPOINT,
                    connection=ConnectionOptions(),
                    max_tokens=8,
                    max_requests=40,
                    max_seconds=30.0,
                    seed=3,
                    options=EndpointOptions(lab.base_url, same_key=True),
                )
                with Store(workdir / "v.db") as store:
                    gain = verify_remedy(plan, store=store).gain_ms
            header = _median([t.gateway_ms or 0.0 for x in through if (t := server_timing_of(x))])
            route = _median([x.ttft_ms or 0.0 for x in through]) - _median(
                [x.ttft_ms or 0.0 for x in direct]
            )
            by_lab = _median([s.gateway_ms + s.queue_ms for x in through if (s := split_ttft(x))])
            per_token = _median([x.tpot_ms or 0.0 for x in through]) - _median(
                [x.tpot_ms or 0.0 for x in direct]
            )
            shown_gain = "n/a" if gain is None else f"{gain:.1f}"
            error = (header - route) / route if route else float("nan")
            print(
                f"{hold:7.0f} | {header:9.1f} | {route:15.1f} | {by_lab:13.1f} | "
                f"{shown_gain:>14} | {error:+15.1%} | {per_token:18.2f}"
            )


if __name__ == "__main__":
    main()
