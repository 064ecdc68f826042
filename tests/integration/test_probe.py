"""The probe against real servers on loopback: phases, reuse, HTTP/2, and the lab's truth."""

from __future__ import annotations

import asyncio
import statistics

import pytest

from conftest import FAST, LabFactory
from latdoc import Endpoint, ProbePlan, ProbeSession, RequestTrace, run_probe
from latdoc.lab.sim import LabConfig, LatencyModel, chat_prompt_tokens, count_tokens
from latdoc.probe import dialects
from latdoc.probe.dialects import DialectSpec
from latdoc.workload import make_prompt
from machine_noise import MachineNoise

PROMPT = "Hello, please briefly introduce yourself."


def _probe(
    base_url: str,
    n: int = 1,
    *,
    prompt: str = PROMPT,
    max_tokens: int = 8,
    dialect: DialectSpec = dialects.chat.SPEC,
    **session_options: object,
) -> list[RequestTrace]:
    async def go() -> list[RequestTrace]:
        endpoint = Endpoint(base_url, "lab-sim", dialect)
        async with ProbeSession(endpoint, **session_options) as session:  # type: ignore[arg-type]
            return [await session.request(prompt, max_tokens) for _ in range(n)]

    return asyncio.run(go())


def _assert_ordered(t: RequestTrace) -> None:
    marks = [
        t.queue_done_ns,
        t.dns_done_ns,
        t.connect_done_ns,
        t.tls_done_ns,
        t.sent_ns,
        t.first_byte_ns,
        t.first_token_ns,
        t.done_ns,
    ]
    present = [m for m in marks if m is not None]
    assert present == sorted(present), marks
    assert t.chunks[0].t_ns == t.first_token_ns
    assert all(a.t_ns <= b.t_ns for a, b in zip(t.chunks, t.chunks[1:], strict=False))


@pytest.mark.parametrize(
    ("tls", "http2", "version"),
    [(False, False, "HTTP/1.1"), (True, False, "HTTP/1.1"), (True, True, "HTTP/2")],
    ids=["http", "https", "h2"],
)
def test_every_phase_is_measured_in_order(
    lab: LabFactory, tls: bool, http2: bool, version: str
) -> None:
    with lab(tls=tls, http2=http2) as server:
        (trace,) = _probe(server.base_url, cacert=server.ca_file, http2=http2)
    assert trace.error is None, trace.error
    assert trace.http_version == version
    assert trace.new_connection is True
    assert trace.remote_ip == "127.0.0.1"
    assert trace.dns_ms is not None and trace.dns_ms >= 0
    assert trace.connect_ms is not None and trace.connect_ms > 0
    if tls:
        assert trace.tls_ms is not None and trace.tls_ms > 0
    else:
        assert trace.tls_done_ns is None and trace.tls_ms is None
    _assert_ordered(trace)
    assert trace.output_tokens == 8 and trace.output_tokens_exact
    assert len(trace.chunks) == 8 and trace.chunk_tokens_exact
    expected_prompt = chat_prompt_tokens([{"role": "user", "content": PROMPT}])
    assert trace.prompt_tokens == expected_prompt
    assert trace.finish_reason == "length"
    assert trace.tcp_info is not None and trace.tcp_info.rtt_us > 0
    assert "prefill" in trace.server_timing


def test_completions_dialect_reads_text_chunks(lab: LabFactory) -> None:
    with lab() as server:
        (trace,) = _probe(server.base_url, dialect=dialects.completions.SPEC, max_tokens=5)
    assert trace.error is None, trace.error
    assert trace.url.endswith("/v1/completions")
    assert len(trace.chunks) == 5
    assert trace.prompt_tokens == count_tokens(PROMPT)


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "h2"])
def test_reused_connection_has_no_handshake(lab: LabFactory, http2: bool) -> None:
    with lab(tls=True, http2=http2) as server:
        first, second = _probe(server.base_url, 2, cacert=server.ca_file, http2=http2)
    assert first.error is None and second.error is None
    assert first.new_connection is True
    assert second.new_connection is False
    assert second.connection_id == first.connection_id
    assert (second.dns_ms, second.connect_ms, second.tls_ms) == (0.0, 0.0, 0.0)
    assert first.tls_ms is not None and first.tls_ms > 0
    _assert_ordered(second)


def test_new_connection_each_pays_the_handshake_every_time(lab: LabFactory) -> None:
    with lab(tls=True) as server:
        traces = _probe(server.base_url, 3, cacert=server.ca_file, reuse_connections=False)
    assert all(t.error is None and t.new_connection for t in traces)
    assert len({t.connection_id for t in traces}) == 3
    assert all(t.tls_ms is not None and t.tls_ms > 0 for t in traces)


def test_prefill_and_decode_are_recovered_within_ten_percent(
    lab: LabFactory, machine_noise: MachineNoise
) -> None:
    model = LatencyModel(prefill_base_ms=60.0, prefill_ms_per_token=0.4, decode_ms_per_token=12.0)
    prompt = make_prompt(200, __import__("random").Random(7))
    with lab(LabConfig(latency=model)) as server:
        traces = _probe(server.base_url, 3, prompt=prompt, max_tokens=20)
    planned = model.prefill_ms(chat_prompt_tokens([{"role": "user", "content": prompt}]))
    for t in traces:
        assert t.error is None, t.error
        assert t.server_timing["prefill"] == pytest.approx(planned, abs=0.01)
        assert t.ttft_ms is not None and t.ttfb_ms is not None and t.tpot_ms is not None
        # Headers come at once; the role-only chunk does not count: prefill is TTFT − TTFB.
        # Within 10 %, widened by the machine's noise (never to half the time planned).
        machine_noise.assert_near(t.ttft_ms - t.ttfb_ms, planned, 0.10 * planned, planned / 2)
        machine_noise.assert_near(t.tpot_ms, 12.0, 1.2, 6.0)
        machine_noise.assert_near(statistics.median(t.itl_ms), 12.0, 1.2, 6.0)


def test_server_wait_holds_the_prefill_when_headers_wait_for_it(
    lab: LabFactory, machine_noise: MachineNoise
) -> None:
    model = LatencyModel(prefill_base_ms=80.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)
    with lab(LabConfig(latency=model, headers_after_prefill=True)) as server:
        (trace,) = _probe(server.base_url)
    assert trace.error is None
    assert trace.wait_ms is not None
    machine_noise.assert_near(trace.wait_ms, 80.0, 8.0, 40.0)
    assert trace.ttft_ms is not None and trace.ttfb_ms is not None
    assert trace.ttft_ms - trace.ttfb_ms < machine_noise.bound_ms(10.0, 40.0)


def test_server_that_rejects_stream_options_is_retried_without(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, reject_stream_options=True)) as server:
        traces = _probe(server.base_url, 2, max_tokens=6)
    for t in traces:
        assert t.error is None, t.error
        assert t.output_tokens == 6
        assert not t.output_tokens_exact
        assert t.prompt_tokens is None


def test_prompt_tokens_are_calibrated_on_the_endpoints_usage(lab: LabFactory) -> None:
    with lab() as server:
        plan = ProbePlan(
            endpoint=Endpoint(server.base_url, "lab-sim"),
            prompt_tokens=300,
            max_tokens=2,
            repeat=3,
            seed=1,
        )
        run = asyncio.run(run_probe(plan))
    assert run.calibration is not None and run.calibration.measured
    assert run.calibration.per_word == pytest.approx(1.0)
    assert [t.prompt_tokens for t in run.traces] == [300, 300, 300]
    assert len(run.calibration_traces) == 2
    assert run.traces[0].new_connection is True
    assert [t.new_connection for t in run.traces[1:]] == [False, False]


def test_without_usage_a_tokenizer_counts_the_output(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, reject_stream_options=True)) as server:
        (trace,) = _probe(server.base_url, max_tokens=7, count_tokens=len)
    assert trace.error is None
    assert len(trace.chunks) == 7
    # The tokenizer here counts characters, so its count differs from the chunk count.
    assert trace.output_tokens == sum(c.chars for c in trace.chunks) > 7
    assert not trace.output_tokens_exact
