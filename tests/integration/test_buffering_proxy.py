"""Streams that do not stream, through a real nginx from Debian on loopback.

nginx proxies to the simulated endpoint (which paces its tokens and tells its
prefill and per-token time in ``Server-Timing``). With ``proxy_buffering on`` and
nginx's default HTTP/1.0 to the upstream, nginx holds the whole event stream and
sends it at the end; the diagnosis must name ``buffering`` with its evidence and
remedy. The same nginx with ``proxy_buffering off``, or with the endpoint answering
``X-Accel-Buffering: no``, passes each event on at once, and the diagnosis must not.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from latdoc import (
    Diagnosis,
    DiagnosisPlan,
    Endpoint,
    Kind,
    RunContext,
    Store,
    VerifyPlan,
    build_diagnosis,
    measure_steps,
    render_diagnosis,
    render_text,
    verify_remedy,
)
from latdoc.features.verify import experiments
from latdoc.features.verify.experiments.endpoint import EndpointOptions
from latdoc.lab.sim import LabConfig, LabServer, LatencyModel
from machine_noise import MachineNoise
from nginx_proxy import nginx_binary, nginx_proxy

if nginx_binary() is None:
    pytest.skip(
        "nginx is not installed (.ci/run installs Debian's nginx-light as root)",
        allow_module_level=True,
    )

LATENCY = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.01, decode_ms_per_token=12.0)
OUTPUT = 24
LONG_OUTPUT = 128


def _diagnose_through_nginx(
    tmp_path: Path,
    *,
    buffering: bool,
    headers: tuple[tuple[str, str], ...] = (),
    latency: LatencyModel = LATENCY,
    output: int = OUTPUT,
    buffer_kb: int = 64,
) -> Diagnosis:
    config = LabConfig(latency=latency, extra_headers=headers)
    with (
        LabServer(config) as lab,
        nginx_proxy(
            lab.base_url.removesuffix("/v1"),
            tmp_path / "nginx",
            buffering=buffering,
            http_version="1.0",
            buffer_kb=buffer_kb,
        ) as proxy,
    ):
        url = proxy + "/v1"
        plan = DiagnosisPlan(
            Endpoint(url, config.model),
            max_tokens=output,
            max_requests=14,
            max_seconds=25.0,
            context_window=2048,
            seed=5,
        )
        result = asyncio.run(measure_steps(plan))
    context = RunContext("test", url, config.model, cpu_count=2, notes=tuple(result.notes))
    return build_diagnosis(result.samples, context)


def test_a_buffering_nginx_is_named_with_its_evidence_and_remedy(
    tmp_path: Path, machine_noise: MachineNoise
) -> None:
    d = _diagnose_through_nginx(tmp_path, buffering=True)
    assert d.verdict.primary is Kind.BUFFERING, d.findings
    (finding,) = [f for f in d.findings if f.kind is Kind.BUFFERING]
    ev = finding.evidence
    assert ev["streams_held"] >= 0.5 * ev["long_streams"] > 0
    assert ev["reads_per_stream"] <= 2
    produced = (OUTPUT - 1) * LATENCY.decode_ms_per_token
    # One burst: its arrivals within 10 ms on a quiet machine, never half the production.
    assert ev["arrival_span_ms"] < machine_noise.bound_ms(10.0, produced / 2)
    assert ev["server_decode_ms"] == pytest.approx(produced)
    machine_noise.assert_near(ev["held_ms"], produced, 10.0, produced / 2)
    assert ev["ttft_over_total"] > 0.95
    assert "Server: nginx/" in finding.rule
    assert Kind.STALLS not in {f.kind for f in d.findings}
    (remedy,) = [r for r in d.remedies if r.addresses is Kind.BUFFERING]
    assert "X-Accel-Buffering: no" in remedy.change and "proxy_buffering off;" in remedy.change
    assert remedy.verify_command is not None
    assert remedy.verify_command.endswith("--remedy endpoint --alt URL2")
    text = render_text(render_diagnosis(d), 120)
    assert "Buffered stream" in text and "held_ms" in text


def test_a_hop_that_passes_the_stream_on_a_buffer_at_a_time_is_named(
    tmp_path: Path, machine_noise: MachineNoise
) -> None:
    """nginx with 8 KB buffers and no temporary file passes a longer answer on a buffer
    at a time: the bursts come over the whole production time, and the first token waits
    while the rest of its buffer is produced."""
    latency = replace(LATENCY, decode_ms_per_token=6.0)
    d = _diagnose_through_nginx(
        tmp_path, buffering=True, latency=latency, output=LONG_OUTPUT, buffer_kb=8
    )
    assert d.verdict.primary is Kind.BUFFERING, d.findings
    (finding,) = [f for f in d.findings if f.kind is Kind.BUFFERING]
    ev = finding.evidence
    assert ev["held_whole"] == 0 and ev["reads_per_stream"] >= 3
    # An event of the lab's chat stream is about 200 bytes: some 40 to a buffer of 8 KB.
    assert 20 <= ev["first_burst_events"] <= 60
    held = (ev["first_burst_events"] - 1) * latency.decode_ms_per_token
    machine_noise.assert_near(ev["held_ms"], held, 0.1 * held, held / 2)
    assert "a buffer at a time" in finding.rule and "Server: nginx/" in finding.rule
    assert Kind.STALLS not in {f.kind for f in d.findings}


def test_the_same_nginx_without_buffering_streams(tmp_path: Path) -> None:
    d = _diagnose_through_nginx(tmp_path, buffering=False)
    assert Kind.BUFFERING not in {f.kind for f in d.findings}, d.findings
    assert d.verdict.primary is not Kind.BUFFERING


def test_the_remedys_header_from_the_server_makes_the_same_nginx_stream(tmp_path: Path) -> None:
    """The first remedy, applied where the stream comes from: with ``proxy_buffering on``
    still set, an upstream that answers ``X-Accel-Buffering: no`` is passed on as it is
    written."""
    d = _diagnose_through_nginx(tmp_path, buffering=True, headers=(("X-Accel-Buffering", "no"),))
    assert Kind.BUFFERING not in {f.kind for f in d.findings}, d.findings
    assert d.verdict.primary is not Kind.BUFFERING


def test_verify_measures_the_remedy_as_one_route_against_the_other(
    tmp_path: Path, machine_noise: MachineNoise
) -> None:
    """The remedy, proved before and after: the same endpoint through a buffering nginx
    (A) and through one with ``proxy_buffering off`` (B). B saves the tokens' hold: the
    time the server took to produce the answer after its first token."""
    config = LabConfig(latency=LATENCY)
    with (
        LabServer(config) as lab,
        nginx_proxy(
            lab.base_url.removesuffix("/v1"), tmp_path / "held", buffering=True, http_version="1.0"
        ) as held,
        nginx_proxy(
            lab.base_url.removesuffix("/v1"), tmp_path / "free", buffering=False, http_version="1.0"
        ) as free,
        Store(tmp_path / "v.db") as store,
    ):
        plan = VerifyPlan(
            endpoint=Endpoint(held + "/v1", config.model),
            remedy=experiments.experiment("endpoint"),
            options=EndpointOptions(alt_url=free + "/v1"),
            max_tokens=OUTPUT,
            max_requests=40,
            max_seconds=30.0,
            seed=2,
        )
        result = verify_remedy(plan, store=store)
    assert result.verdict == "better", result
    produced = (OUTPUT - 1) * LATENCY.decode_ms_per_token
    assert result.gain_ms is not None
    machine_noise.assert_effect(result.gain_ms, produced, 0.15)
