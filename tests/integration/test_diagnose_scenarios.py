"""The verdict against lab scenarios whose truth is known.

Each scenario is the simulated endpoint in its own process with one kind of slow
switched on; the diagnosis must name that kind as the primary one. The healthy
endpoint must produce no ``network_*`` kind at all, and a slow that is real but too
small to notice must come out negligible, not as the verdict.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import replace

from latdoc import (
    ConnectionOptions,
    Diagnosis,
    DiagnosisPlan,
    Endpoint,
    Kind,
    RunContext,
    Scenario,
    build_diagnosis,
    measure_steps,
)
from latdoc.analysis.policy import MIN_INTERVAL_N
from latdoc.lab.sim import Fault, LabConfig, LabProcess, LatencyModel
from latdoc.probe import dialects
from latdoc.probe.dialects import DialectSpec
from machine_noise import MachineNoise

BASE = LatencyModel(prefill_base_ms=15.0, prefill_ms_per_token=0.01, decode_ms_per_token=4.0)
OUTPUT = 12


def _diagnose(
    config: LabConfig,
    *,
    connection: ConnectionOptions | None = None,
    host: str | None = None,
    scenario: Scenario = Scenario.CHAT,
    max_seconds: float = 40.0,
    context_window: int = 8192,
    dialect: DialectSpec = dialects.chat.SPEC,
    concurrency: int = 4,
) -> Diagnosis:
    with LabProcess(config) as lab:
        url = lab.base_url if host is None else lab.base_url.replace("127.0.0.1", host)
        plan = DiagnosisPlan(
            Endpoint(url, config.model, dialect),
            connection=connection or ConnectionOptions(),
            max_tokens=OUTPUT,
            max_seconds=max_seconds,
            context_window=context_window,
            seed=11,
            concurrency=concurrency,
        )
        result = asyncio.run(measure_steps(plan))
    context = RunContext(
        "test", url, config.model, scenario, cpu_count=2, notes=tuple(result.notes)
    )
    return build_diagnosis(result.samples, context)


def _kinds(d: Diagnosis) -> Sequence[Kind]:
    return [f.kind for f in d.findings]


def test_healthy_endpoint_has_no_network_verdict() -> None:
    d = _diagnose(LabConfig(latency=BASE))
    assert d.verdict.primary is Kind.HEALTHY, d.findings
    assert not any(k in (Kind.NETWORK_SETUP, Kind.NETWORK_PATH) for k in _kinds(d))
    assert d.failed == 0
    parts = d.typical_request
    assert parts is not None and parts.decode_ms > parts.prefill_ms > parts.setup_ms > 0
    assert d.length_check is not None and not d.length_check.fired
    assert Kind.REASONING not in _kinds(d) and not d.reasoning


def test_thinking_before_the_answer_is_reasoning(machine_noise: MachineNoise) -> None:
    thinker = dataclasses.replace(BASE, reasoning_tokens=60)
    d = _diagnose(LabConfig(latency=thinker), dialect=dialects.anthropic.SPEC)
    assert d.verdict.primary is Kind.REASONING, d.findings
    assert Kind.DECODE not in _kinds(d)
    (finding,) = [f for f in d.findings if f.kind is Kind.REASONING]
    machine_noise.assert_near(finding.share_ms, 60 * 4.0, 0.25 * 60 * 4.0, 0.5 * 60 * 4.0)
    assert d.reasoning["reasoning_tokens"] == 60
    assert d.reasoning["hidden_n"] == 0
    ttfr, ttfa = d.reasoning["ttfr_ms"], d.reasoning["ttfa_ms"]
    assert ttfr is not None and ttfa is not None and ttfa - ttfr > 200
    parts = d.typical_request
    assert parts is not None and parts.reasoning_ms > parts.decode_ms
    keys = [r.key for r in d.remedies if r.addresses is Kind.REASONING]
    assert keys == ["reasoning_effort", "non_reasoning_model"]
    (effort,) = [r for r in d.remedies if r.key == "reasoning_effort"]
    assert "--remedy reasoning-effort --reasoning-effort low" in str(effort.verify_command)


def test_slow_dns_is_network_setup(machine_noise: MachineNoise) -> None:
    """A 600 ms lookup: 400 ms past the reference profile's slowest healthy one (a 250 ms
    lookup is 50 ms past it, too little for a new connection to notice)."""

    async def slow_resolver(host: str, port: int) -> list[str]:
        await asyncio.sleep(0.6)
        return ["127.0.0.1"]

    d = _diagnose(
        LabConfig(latency=BASE),
        connection=ConnectionOptions(resolver=slow_resolver),
        host="api.lab.test",
    )
    assert d.verdict.primary is Kind.NETWORK_SETUP, d.findings
    (finding,) = [f for f in d.findings if f.kind is Kind.NETWORK_SETUP]
    assert finding.title == "Slow DNS lookup"
    machine_noise.assert_near(finding.evidence["dns_ms"], 600, 30, 300)
    assert any(r.key == "dns_cache" for r in d.remedies)


def test_quadratic_prefill_is_input_length() -> None:
    quadratic = dataclasses.replace(BASE, prefill_ms_per_token2=0.00005)
    d = _diagnose(LabConfig(latency=quadratic), context_window=4096)
    assert d.verdict.primary is Kind.INPUT_LENGTH, d.findings
    assert d.length is not None and d.length.shape == "super-linear"
    trim = d.remedies[0]
    assert trim.key == "trim_window" and trim.gain_source == "fitted"
    assert trim.predicted_gain_ms is not None and trim.predicted_gain_ms > 0
    assert trim.gain_interval_ms is not None
    assert trim.verify_command is not None and "--remedy trim --from 2048 --to 1024" in (
        trim.verify_command
    )


def test_queueing_under_background_load() -> None:
    config = LabConfig(
        latency=dataclasses.replace(BASE, decode_ms_per_token=20.0),
        slots=2,
        load_profile=(0.0, 1.0),
        day_seconds=4.0,
        background_request_ms=400.0,
    )
    d = _diagnose(config)
    assert d.verdict.primary is Kind.QUEUEING, d.findings
    assert not any(k in (Kind.NETWORK_SETUP, Kind.NETWORK_PATH) for k in _kinds(d))
    (spread,) = [r for r in d.remedies if r.key == "spread_requests"]
    measure = spread.how_to_measure or ""
    assert "latdoc watch " in measure and "--every 15m --duration 24h" in measure
    assert "latdoc report --watch peak --by hour-of-day" in measure


def test_mid_stream_stalls(machine_noise: MachineNoise) -> None:
    config = LabConfig(latency=BASE, stall_after_token=5, stall_ms=400.0, stall_rate=0.3, seed=2)
    d = _diagnose(config)
    assert d.verdict.primary is Kind.STALLS, d.findings
    (finding,) = [f for f in d.findings if f.kind is Kind.STALLS]
    machine_noise.assert_near(finding.evidence["longest_ms"], 400, 50, 200)
    (stall,) = [r for r in d.remedies if r.key == "stall_timeout"]
    assert stall.predicted_gain_ms is None and "catches all" in stall.change


def test_rate_limiting_is_errors() -> None:
    d = _diagnose(LabConfig(latency=BASE, fault=Fault.RATE_LIMIT, fault_rate=0.5, seed=5))
    assert d.verdict.primary is Kind.ERRORS, d.findings
    (finding,) = [f for f in d.findings if f.kind is Kind.ERRORS]
    assert finding.evidence["http:429"] >= 3
    assert d.remedies[0].key in ("retries", "spread_requests")


def test_cold_connections_without_keep_alive_are_network_setup() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        await asyncio.sleep(0.06)  # a resolver 60 ms away: slow to pay per request, not > 200 ms
        return ["127.0.0.1"]

    d = _diagnose(
        LabConfig(latency=BASE, keep_alive=False),
        connection=ConnectionOptions(resolver=resolver),
        host="api.lab.test",
    )
    assert d.verdict.primary is Kind.NETWORK_SETUP, (d.findings, d.noticeable)
    (finding,) = [f for f in d.findings if f.kind is Kind.NETWORK_SETUP]
    assert finding.title == "Every request opens a new connection"
    assert finding.evidence["reused_fraction"] == 0.0
    keep_alive = d.remedies[0]
    assert keep_alive.key == "keep_alive"
    # Its gain is the setup every new connection paid: measured, with its interval, from
    # MIN_INTERVAL_N setups; the first cold request and the three that found the
    # connection closed are four, whose median no interval holds 95% of the time.
    setups = (d.network["cold_n"] or 0) + (d.network["warm_n"] or 0)
    if setups >= MIN_INTERVAL_N:
        assert keep_alive.gain_source == "measured" and keep_alive.gain_interval_ms is not None
        low, high = keep_alive.gain_interval_ms
        assert low <= d.network["new_connection_setup_ms"] <= high  # type: ignore[operator]
    else:
        assert d.network["new_connection_setup_ms"] is not None
        assert keep_alive.gain_source is None and keep_alive.gain_interval_ms is None


def test_a_loopback_setup_is_negligible_next_to_the_request() -> None:
    # About 1 ms of DNS + TCP on loopback in a request of about 0.2 s: under 5%, even on
    # a loaded machine whose client wakes a few ms late from each connect.
    unhurried = replace(BASE, prefill_base_ms=150.0)
    d = _diagnose(LabConfig(latency=unhurried, keep_alive=False))
    assert d.verdict.primary is Kind.HEALTHY, (d.findings, d.noticeable)
    assert Kind.NETWORK_SETUP in d.verdict.negligible
    assert not any(r.addresses is Kind.NETWORK_SETUP for r in d.remedies)


def test_a_length_beyond_the_context_window_is_not_an_error_of_the_service() -> None:
    """The plan does not know the window: the length step asks 8K tokens of a 4K-token
    model, which refuses it (HTTP 400), and stops there. That refusal is the probe's own
    request over the limit: one failure in fourteen requests made the errors kind
    contribute to a run whose every request a user would send succeeded."""
    d = _diagnose(LabConfig(latency=BASE, max_context_tokens=4096), context_window=32768)
    assert d.failed == 1
    assert any("rejected by the endpoint" in n.text for n in d.notes)
    assert Kind.ERRORS not in _kinds(d)
    assert Kind.ERRORS not in (d.verdict.primary, *d.verdict.contributing)


def test_the_queueing_share_is_what_a_request_waits_at_the_users_concurrency() -> None:
    """Two slots: at --concurrency 2 nobody queues; at 8 a request waits for three
    others' service on average. The share is measured at the concurrency the user runs,
    not at latdoc's own burst of four."""
    slots = LabConfig(latency=replace(BASE, decode_ms_per_token=12.0), slots=2)
    alone = _diagnose(slots, concurrency=2)
    assert Kind.QUEUEING not in _kinds(alone)
    crowded = _diagnose(slots, concurrency=8)
    finding = next(f for f in crowded.findings if f.kind is Kind.QUEUEING)
    assert finding.evidence["concurrency"] == 8
    assert "--concurrency" in finding.rule
    service = crowded.load["ttft_p50_ms"] or 0.0
    assert finding.share_ms > service
