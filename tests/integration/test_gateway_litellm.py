"""A gateway named, through a real LiteLLM proxy in front of the lab, on loopback.

The proxy holds each request a known time before it goes upstream (a pre-call hook, as a
guardrail or a budget check would). What it adds is measured three ways and each must
come within 15% of the others' truth: its own header (``x-litellm-overhead-duration-ms``,
read into the server record), the lab's own timing (the first token's wait beyond the
network and the prefill the lab told, passed on by the proxy), and the direct route
(``latdoc verify --remedy endpoint``: the gateway against the lab called direct). The
diagnosis names it under ``network_path``.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from latdoc import (
    Endpoint,
    Kind,
    ProbeSession,
    RequestTrace,
    RunContext,
    Sample,
    Step,
    build_diagnosis,
    render_diagnosis,
    render_text,
)
from latdoc.analysis.servertime import server_timing_of, split_ttft
from latdoc.features.verify import VerifyPlan, experiments, verify_remedy
from latdoc.features.verify.experiments.endpoint import EndpointOptions
from latdoc.lab.sim import LabConfig, LabServer, LatencyModel
from latdoc.probe import ConnectionOptions
from latdoc.store import Store
from litellm_gateway import MASTER_KEY, Gateway, litellm_executable, litellm_gateway
from machine_noise import MachineNoise, spread_ms

EXECUTABLE = litellm_executable()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        EXECUTABLE is None,
        reason="LiteLLM's proxy is not installed: make .venv-litellm/.installed",
    ),
]

TOLERANCE = 0.15
HOLD_MS = 80.0
"""What the gateway's own work holds each request before it goes upstream."""
LATENCY = LatencyModel(prefill_base_ms=30.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)
MODEL = "lab-sim"
REQUESTS = 12


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Gateway]]:
    assert EXECUTABLE is not None
    with LabServer(LabConfig(latency=LATENCY)) as lab:
        workdir = tmp_path_factory.mktemp("litellm")
        with litellm_gateway(EXECUTABLE, lab.base_url, MODEL, workdir, HOLD_MS) as gateway:
            yield lab.base_url, gateway


async def _requests(url: str, n: int) -> list[RequestTrace]:
    async with ProbeSession(Endpoint(url, MODEL, api_key=MASTER_KEY)) as session:
        traces = [await session.request("hello", 8) for _ in range(n + 1)]
    return traces[1:]  # the first pays for the connection and the proxy's first call


def _median(values: list[float]) -> float:
    return statistics.median(values)


def test_the_gateways_overhead_from_its_header_the_lab_and_the_direct_route(
    routes: tuple[str, Gateway], machine_noise: MachineNoise
) -> None:
    direct_url, gateway = routes
    through = asyncio.run(_requests(gateway.base_url, REQUESTS))
    direct = asyncio.run(_requests(direct_url, REQUESTS))
    assert all(t.ok for t in through + direct)
    told = [server_timing_of(t) for t in through]
    assert all(t is not None and t.gateway_ms is not None for t in told)
    header = _median([t.gateway_ms or 0.0 for t in told if t is not None])
    # The lab's Server-Timing reaches the client through the proxy: its prefill is told.
    assert all(t is not None and t.prefill_ms == LATENCY.prefill_base_ms for t in told)
    assert all(t is not None and "LiteLLM" in t.source for t in told)

    direct_ttft = _median([t.ttft_ms or 0.0 for t in direct])
    through_ttft = _median([t.ttft_ms or 0.0 for t in through])
    by_direct_route = through_ttft - direct_ttft
    # The lab's own account: what the first token waited beyond the network and the
    # prefill the lab told is the gateway's (its header's part and what it did not count).
    splits = [split_ttft(t) for t in through]
    by_lab = _median([s.gateway_ms + s.queue_ms for s in splits if s is not None])
    assert header >= HOLD_MS
    # Within 15 %, widened by the machine's noise and the spread of the requests' TTFT.
    spread = max(spread_ms(t.ttft_ms or 0.0 for t in ts) for ts in (through, direct))
    machine_noise.assert_effect(by_direct_route, header, TOLERANCE, extra_ms=spread)
    machine_noise.assert_effect(by_lab, header, TOLERANCE, extra_ms=spread)

    samples = [Sample(Step.LOAD, t, index=i) for i, t in enumerate(through)]
    d = build_diagnosis(samples, RunContext("gateway", gateway.base_url, MODEL, cpu_count=2))
    (path,) = [f for f in d.findings if f.kind is Kind.NETWORK_PATH]
    assert path.title.startswith("A gateway adds time before the model")
    assert path.evidence["gateway_ms"] == pytest.approx(header)
    assert d.server is not None and d.server.numbers["gateway_ms"] == pytest.approx(header)
    (remedy,) = d.remedies  # the gateway alone: no remedy of the rest of the path
    assert remedy.title.startswith("Lighten the gateway")
    assert remedy.verify_command is not None and "--remedy endpoint" in remedy.verify_command
    text = render_text(render_diagnosis(d), width=160)
    assert "A gateway adds time before the model" in text
    assert f"gateway {header:.0f}" in text or f"gateway {header:.1f}" in text, text


def test_verify_endpoint_measures_the_gateway_against_the_upstream_direct(
    routes: tuple[str, Gateway], tmp_path: Path, machine_noise: MachineNoise
) -> None:
    direct_url, gateway = routes
    plan = VerifyPlan(
        endpoint=Endpoint(gateway.base_url, MODEL, api_key=MASTER_KEY),
        remedy=experiments.experiment("endpoint"),
        connection=ConnectionOptions(),
        max_tokens=8,
        max_requests=40,
        max_seconds=30.0,
        seed=3,
        options=EndpointOptions(direct_url, same_key=True),
    )
    with Store(tmp_path / "v.db") as store:
        result = verify_remedy(plan, store=store)
        assert result.run_ids is not None
        _, samples, _ = store.load_run(result.run_ids[0])
    told = [t.gateway_ms for s in samples if (t := server_timing_of(s.trace)) is not None]
    header = _median([g for g in told if g is not None])
    assert result.verdict == "better", result
    assert result.gain_ms is not None
    spread = spread_ms(g for g in told if g is not None)
    machine_noise.assert_effect(result.gain_ms, header, TOLERANCE, extra_ms=spread)
