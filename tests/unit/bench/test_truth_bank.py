"""The truth bank on a small seeded slice: its records pass through the analysis, clear
single causes are named, and an endpoint with no cause is healthy by its truth."""

from __future__ import annotations

import itertools

import pytest

from bank import CAUSES, Scenario, context, draw, draw_many, generate, truth
from bank.counterfactual import counterfactual
from bank.truth import LONG_UPLOAD_TOKENS, upload_ms_of
from latdoc import Kind, Step, build_diagnosis
from latdoc.analysis.servertime import server_timing_of
from latdoc.records import Sample
from latdoc.workload import EXTRA_COLD, network_unsettled

PER_CAUSE = 6
WIRE_CAUSES = ("slow_upload", "reasoning", "buffering", "client_delay")
"""The causes modelled after the first ten: a slow uplink, reasoning before the
answer, a hop that buffers the stream and a client that holds its requests."""
TOLD = "server_timing"
"""What the server tells of its own timing: it adds no latency, so it is no kind."""
FIRST_CAUSES = tuple(c for c in CAUSES if c not in (*WIRE_CAUSES, TOLD))
CLEAR_RATE = 55 / 60
"""Measured on this slice against the counterfactual truth (``bank.counterfactual``),
with a kind counting from a tenth of the user's request: 55 of 60 clear, low-noise
single causes named as the primary kind. The misses: a slow lookup and a slow TLS
handshake whose saving, weighed on a request that opens a connection, is under a
tenth of it, named all the same; a busy server named where its periods cost less than
a tenth, and one not named where they cost more; a 30% error rate whose retries cost
less than a tenth of a long request, named as the verdict since a quarter failed."""
WIRE_CLEAR_RATE = 23 / 24
"""Measured against the counterfactual truth: 23 of 24 (the miss, a client delay of 8.8%
of the user's 2K-token request, named against the 128-token request the bar reads)."""
MATERIAL_MISSES = 10
"""Clear causes of the 60 whose saving is under the bar (measured: 9, slow lookups and
handshakes weighed on a long request among them)."""
MARGIN = 0.04
WIRE_MARGIN = 0.05
"""One miss in 24 is allowed."""


def _phases(s: Scenario, samples: list[Sample]) -> None:
    """The records of ``s`` (``samples``, as :func:`bank.generate` made them) have their
    phases in order and every field the analysis reads."""
    for sample in samples:
        t = sample.trace
        marks = [
            t.queue_done_ns,
            t.dns_done_ns,
            t.connect_done_ns,
            t.tls_done_ns,
            t.write_start_ns,
            t.sent_ns,
            t.first_byte_ns,
            t.first_token_ns,
            t.done_ns,
        ]
        present = [m for m in marks if m is not None]
        assert present == sorted(present), (s.label, sample.step, marks)
        # A reused connection's DNS, connect and TLS end where its queue ended.
        assert (t.dns_ms == 0) == (not t.new_connection)
        assert t.sent_acked and t.queue_ms == 0
        assert t.client_delay_ms is not None and sample.loop_lag_ms is not None
        if t.ok:
            assert t.output_tokens is not None
            hidden = 0 if t.first_reasoning_ns is not None else t.reasoning_tokens or 0
            assert len(t.chunks) == t.output_tokens - hidden
            assert [c.t_ns for c in t.chunks] == sorted(c.t_ns for c in t.chunks)
            assert t.first_token_ns == t.chunks[0].t_ns
            assert t.first_answer_ns is not None and t.first_answer_ns >= t.first_token_ns
            assert t.tcp_info is not None
        else:
            assert t.error is not None


def test_the_bank_records_a_run_the_analysis_reads_step_by_step() -> None:
    for s in draw_many(60, seed=17):
        samples = generate(s)
        _phases(s, samples)
        assert samples == generate(s), "the same seed gives the same samples"
        steps = {sample.step for sample in samples}
        assert {Step.CALIBRATION, Step.NETWORK} <= steps
        network = [x for x in samples if x.step is Step.NETWORK]
        assert any(x.cold for x in network)
        assert [x.index for x in samples] == list(range(len(samples)))
        d = build_diagnosis(samples, context(s))
        assert d.requests == sum(1 for x in samples if x.step is not Step.CALIBRATION) + sum(
            1 for x in samples if x.step is Step.CALIBRATION and not x.trace.ok
        )
        if s.server_closes:
            assert d.network["server_closes_connections"] in (None, 1.0)


def test_a_full_run_sends_every_step_the_plan_names() -> None:
    """A healthy endpoint settles the length step at one request a length: one cold
    request and three warm ones (three more cold ones when a new connection's setup is
    worth keep-alive's pairs), each length once, three sequential requests and the burst."""
    s = draw(3, causes=(), noise="low")
    samples = generate(s)
    count = {step: sum(1 for x in samples if x.step is step) for step in Step}
    assert count[Step.CALIBRATION] == 2
    network = [x.trace for x in samples if x.step is Step.NETWORK]
    extra = 0 if network_unsettled(network[0], network[1:4]) is None else EXTRA_COLD
    assert count[Step.NETWORK] == 4 + extra
    assert count[Step.LENGTH] == 4
    assert count[Step.LOAD] == 3 + s.concurrency
    assert [x.target_prompt_tokens for x in samples if x.step is Step.LENGTH] == [
        2048,
        512,
        8192,
        32768,
    ]
    assert {x.concurrency for x in samples if x.step is Step.LOAD} == {1, s.concurrency}


def test_clear_single_causes_are_named_as_the_primary_kind() -> None:
    right, missed, material = 0, [], 0
    for cause, i in itertools.product(FIRST_CAUSES, range(PER_CAUSE)):
        s = draw(1000 + i, causes=(cause,), intensity="clear", noise="low")
        true = counterfactual(s)
        material += true.primary is not Kind.HEALTHY
        verdict = build_diagnosis(generate(s), context(s)).verdict
        if verdict.primary is true.primary:
            right += 1
        else:
            missed.append((cause, true.primary.value, verdict.primary.value))
    rate = right / (len(FIRST_CAUSES) * PER_CAUSE)
    assert rate >= CLEAR_RATE - MARGIN, (rate, missed)
    # A clear cause can still be too small to notice in a long request (a connection
    # setup of 150 ms in a 4 s answer).
    assert material >= len(FIRST_CAUSES) * PER_CAUSE - MATERIAL_MISSES


def _carries(cause: str, s: Scenario, samples: list[Sample]) -> None:
    """The records show the cause as the probe would record it."""
    ok = [x for x in samples if x.trace.ok]
    if cause == "slow_upload":
        long = [x.trace for x in ok if x.target_prompt_tokens == LONG_UPLOAD_TOKENS]
        assert long, "the length step sent the long prompt"
        # The end of send is the peer's ACK: the upload, less its last two segments.
        for t in long:
            assert t.send_ms is not None
            assert t.send_ms >= upload_ms_of(s, LONG_UPLOAD_TOKENS) * 0.8
    elif cause == "reasoning":
        for x in ok:
            t = x.trace
            assert t.reasoning_tokens, "the usage counts the reasoning"
            assert (t.first_reasoning_ns is not None) == s.reasoning_shown
            if s.reasoning_shown:
                assert t.first_answer_ns is not None and t.first_token_ns is not None
                assert t.first_answer_ns > t.first_token_ns
    elif cause == "buffering":
        for x in (x for x in ok if len(x.trace.chunks) >= 16):
            reads = len({c.t_ns for c in x.trace.chunks})
            assert reads * 8 <= len(x.trace.chunks), "a read carries a burst of events"
            if s.buffer_whole:
                assert x.trace.first_byte_ns == x.trace.first_token_ns
                assert "content-length" in x.trace.proxy_headers
    elif cause == "client_delay":
        for x in samples:
            delay = x.trace.client_delay_ms
            assert delay is not None and delay >= s.client_delay_ms * 0.5
            assert x.loop_lag_ms is not None and x.loop_lag_ms >= delay


def test_clear_wire_causes_are_recorded_whole_and_named() -> None:
    """A slow uplink, reasoning, a buffering hop and a busy client, each clear at low
    noise: recorded with consistent phases, as the probe records them, and named."""
    right, missed, material = 0, [], 0
    for cause, i in itertools.product(WIRE_CAUSES, range(PER_CAUSE)):
        s = draw(1000 + i, causes=(cause,), intensity="clear", noise="low")
        samples = generate(s)
        _phases(s, samples)
        _carries(cause, s, samples)
        true = counterfactual(s)
        material += true.primary is not Kind.HEALTHY
        verdict = build_diagnosis(samples, context(s)).verdict
        if verdict.primary is true.primary:
            right += 1
        else:
            missed.append((cause, i, true.primary.value, verdict.primary.value))
    rate = right / (len(WIRE_CAUSES) * PER_CAUSE)
    assert rate >= WIRE_CLEAR_RATE - WIRE_MARGIN, (rate, missed)
    # A client delay of 80-400 ms, or a 2K prompt's slow upload, can be too small to
    # notice in a long request: three are.
    assert material >= len(WIRE_CAUSES) * PER_CAUSE - 3


@pytest.mark.parametrize("intensity", ["clear", "borderline"])
def test_a_server_that_tells_its_timing_is_read_and_changes_no_verdict(intensity: str) -> None:
    sources = {
        "server-timing": "Server-Timing",
        "llama.cpp": "llama.cpp timings",
        "openai-processing": "openai-processing-ms",
    }
    for i in range(4):
        s = draw(1000 + i, causes=(TOLD,), intensity=intensity, noise="low")
        samples = generate(s)
        _phases(s, samples)
        assert truth(s).primary is Kind.HEALTHY
        told = [server_timing_of(x.trace) for x in samples if x.trace.ok]
        assert all(t is not None for t in told)
        d = build_diagnosis(samples, context(s))
        assert d.verdict.primary is Kind.HEALTHY, d.verdict
        assert d.server is not None and d.server.source == sources[s.server_timing]
        # With a slot-starved server, the told wait under load is the true queue.
        queued = draw(1000 + i, causes=("burst_queue", TOLD), intensity=intensity, noise="low")
        true = truth(queued)
        d = build_diagnosis(generate(queued), context(queued))
        assert d.verdict.primary is true.primary is Kind.QUEUEING
        if queued.server_timing != "openai-processing":
            assert d.server is not None
            wait = d.server.numbers["concurrent_wait_ms"]
            assert wait == pytest.approx(true.sizes_ms[Kind.QUEUEING], rel=0.1)


@pytest.mark.parametrize("noise", ["low", "mid", "high"])
def test_an_endpoint_with_no_cause_is_healthy_by_its_truth(noise: str) -> None:
    for seed in range(8):
        s = draw(seed, causes=(), noise=noise)
        true = truth(s)
        assert true.primary is Kind.HEALTHY, (s, true)
        assert true.contributing == ()
        assert not true.sizes_ms
    healthy = [
        build_diagnosis(generate(s), context(s)).verdict.primary
        for s in (draw(seed, causes=(), noise=noise) for seed in range(8))
    ]
    assert healthy.count(Kind.HEALTHY) >= 7, healthy


def test_the_truth_follows_the_model_not_the_label() -> None:
    far = draw(5, causes=("far",), intensity="clear", noise="low")
    assert truth(far).primary is Kind.NETWORK_PATH
    # The same endpoint brought near again has nothing to name, whatever its label says.
    assert truth(Scenario(**{**_fields(far), "rtt_ms": 20.0})).primary is Kind.HEALTHY
    both = draw(6, causes=("slow_decode", "long_input"), intensity="clear", noise="low")
    t = truth(both)
    assert set(t.named) == {Kind.DECODE, Kind.INPUT_LENGTH}
    assert t.primary is max(t.sizes_ms, key=lambda k: t.sizes_ms[k])


def _fields(s: Scenario) -> dict[str, object]:
    return {name: getattr(s, name) for name in Scenario.__dataclass_fields__}
