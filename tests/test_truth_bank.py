"""The truth bank on a small seeded slice: its records pass through the analysis, clear
single causes are named, and an endpoint with no cause is healthy by its truth."""

from __future__ import annotations

import itertools

import pytest

from bank import CAUSES, Scenario, context, draw, draw_many, generate, truth
from latdoc import Kind, Step, build_diagnosis
from latdoc.workload._settle import network_unsettled

PER_CAUSE = 6
CLEAR_RATE = 58 / 60
"""Measured on this slice when the bank was written: 58 of 60 clear, low-noise single
causes named as the primary kind (the misses: stalls and busy periods whose own
effect inflates the noise bar of the four warm requests)."""
MARGIN = 0.04


def _phases(s: Scenario) -> None:
    for sample in generate(s):
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
        assert t.new_connection == (t.dns_done_ns is not None)
        if t.ok:
            assert len(t.chunks) == t.output_tokens
            assert [c.t_ns for c in t.chunks] == sorted(c.t_ns for c in t.chunks)
            assert t.first_token_ns == t.chunks[0].t_ns
        else:
            assert t.error is not None


def test_the_bank_records_a_run_the_analysis_reads_step_by_step() -> None:
    for s in draw_many(60, seed=17):
        _phases(s)
        samples = generate(s)
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
    request and three warm ones (two more cold ones when a new connection's setup is
    worth keep-alive's pairs), each length once, three sequential requests and the burst."""
    s = draw(3, causes=(), noise="low")
    samples = generate(s)
    count = {step: sum(1 for x in samples if x.step is step) for step in Step}
    assert count[Step.CALIBRATION] == 2
    network = [x.trace for x in samples if x.step is Step.NETWORK]
    extra = 0 if network_unsettled(network[0], network[1:4]) is None else 2
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
    for cause, i in itertools.product(CAUSES, range(PER_CAUSE)):
        s = draw(1000 + i, causes=(cause,), intensity="clear", noise="low")
        true = truth(s)
        material += true.primary is not Kind.HEALTHY
        verdict = build_diagnosis(generate(s), context(s)).verdict
        if verdict.primary is true.primary:
            right += 1
        else:
            missed.append((cause, true.primary.value, verdict.primary.value))
    rate = right / (len(CAUSES) * PER_CAUSE)
    assert rate >= CLEAR_RATE - MARGIN, (rate, missed)
    # A clear cause can still be too small to notice in a long request (a connection
    # setup of 150 ms in a 4 s answer): one of these 60 is.
    assert material >= len(CAUSES) * PER_CAUSE - 2


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
