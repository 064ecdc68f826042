"""The bank's synthetic run and a real run over the wire read one endpoint alike.

Three of ``bench/live_lab.py``'s scenarios, each run by the bank's generator and by
a real diagnosis against the lab set up as the same latency model (its jitter on):
both name the truth's primary kind, and the figures the rules read agree within
stated tolerances. The wire adds what loopback and the lab's own Python cost (a few
ms before the first token, a ms or so after the last), and its random draws (jitter)
are its own, so the figures are compared within tolerances, not equal."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bank import generate
from bank.lab import Case, Comparison, Figures, compare, lab_config, measure
from latdoc.lab.sim import LabProcess
from latdoc.records import Step
from latdoc.workload._steps import EXTRA_COLD
from live_lab import CASES
from machine_noise import MachineNoise

RATIO_TOLERANCE = 0.25
"""The length rule's ratio, relative."""
TTFT_TOLERANCE = 0.15
"""The TTFT p50 of requests sent alone, relative."""
TPOT_TOLERANCE = 0.15
"""Decode ms per token, relative."""
BURST_TOLERANCE = 0.25
"""The burst's TTFT over that of requests sent alone, relative."""
SHARE_TOLERANCE = 0.25
"""The true primary kind's share of the typical request, relative."""
STEP_TOLERANCE = 1
"""Requests a step sent: equal or within one."""
SETUP_NOTICED = "a new connection's setup is a noticeable share of a request"
"""The network step's note when its first cold request's setup asked for more."""

BY_NAME = {case.name: case for case in CASES}
NAMES = ("healthy", "long input, clear", "burst queue, clear")


def _close(bank: float | None, wire: float | None, tolerance: float) -> bool:
    assert bank is not None and wire is not None
    return abs(wire - bank) <= tolerance * abs(bank)


def _close_ms(noise: MachineNoise, bank: float | None, wire: float | None, rel: float) -> bool:
    """A time in ms: within ``rel`` widened by the machine's noise, never half of it."""
    assert bank is not None and wire is not None
    return abs(wire - bank) <= noise.bound_ms(rel * abs(bank), 0.5 * abs(bank))


BUDGET_SLACK = 3.0
"""Both runs' time budget over the case's. The bank's run never needs its case's 8 s
(its figures are the same with three times that); the wire's, on a busy machine, can,
and its last step (the load) would then send fewer requests than the bank's."""


@pytest.fixture(scope="module", params=NAMES)
def run(request: pytest.FixtureRequest) -> Comparison:
    case = BY_NAME[request.param]
    return compare(replace(case, max_seconds=BUDGET_SLACK * case.max_seconds))


def test_bank_and_wire_name_the_true_primary_kind(run: Comparison) -> None:
    assert run.bank.primary is run.truth.primary
    assert run.wire.primary is run.truth.primary


def test_the_figures_agree_within_their_tolerances(
    run: Comparison, machine_noise: MachineNoise
) -> None:
    b, w = run.bank, run.wire
    assert _close(b.length_ratio, w.length_ratio, RATIO_TOLERANCE), (b, w)
    assert _close_ms(machine_noise, b.ttft_alone_ms, w.ttft_alone_ms, TTFT_TOLERANCE), (b, w)
    assert _close_ms(machine_noise, b.tpot_ms, w.tpot_ms, TPOT_TOLERANCE), (b, w)
    assert _close(b.burst_ratio, w.burst_ratio, BURST_TOLERANCE), (b, w)
    kind = run.truth.primary
    if kind in run.truth.sizes_ms:
        bank_share, wire_share = b.shares_ms.get(kind), w.shares_ms.get(kind)
        assert _close_ms(machine_noise, bank_share, wire_share, SHARE_TOLERANCE), (b, w)


def _setup_noticed(figures: Figures) -> bool:
    return any(SETUP_NOTICED in note for note in figures.notes)


def test_each_step_sent_as_many_requests_or_one_apart(run: Comparison) -> None:
    steps = set(run.bank.by_step) | set(run.wire.by_step)
    for step in steps:
        bank, wire = run.bank.by_step.get(step, 0), run.wire.by_step.get(step, 0)
        if step == "network" and _setup_noticed(run.wire) and not _setup_noticed(run.bank):
            # On a busy machine the client wakes late from a loopback connect, and the
            # wire's setup can reach the noticeable share of a quick request that the
            # bank's modelled loopback never does: the step then sends its extra cold
            # requests, those and no others.
            wire -= EXTRA_COLD
        assert abs(bank - wire) <= STEP_TOLERANCE, (step, run.bank.by_step, run.wire.by_step)
    assert run.bank.by_step.get("length", 0) > 0 and run.bank.by_step.get("load", 0) > 0


RECORDED = (
    "first_byte_ns",
    "first_token_ns",
    "done_ns",
    "prompt_tokens",
    "output_tokens",
    "finish_reason",
    "tcp_info",
    "total_ms",
)
"""What a failed request's trace has or lacks."""


@pytest.mark.parametrize("code", ["http:503", "http:429", "stream_broken"])
def test_a_failed_request_is_recorded_by_the_bank_as_the_probe_records_it(code: str) -> None:
    """Every request fails; the network step's traces of the bank and of the wire have
    and lack the same fields, fail the same way and keep as many events."""
    quick = {"prefill_a_ms": 8.0, "tpot_ms": 2.0, "error_share": 1.0, "error_code": code}
    s = Case("failing", 6, ("errors",), max_seconds=2.0, changes=quick).scenario()
    config = lab_config(s)
    assert config is not None
    bank = [x.trace for x in generate(s, max_seconds=2.0) if x.step is Step.NETWORK]
    with LabProcess(config) as lab:
        run = measure(s, lab.base_url, max_seconds=2.0)
    wire = [x.trace for x in run.samples if x.step is Step.NETWORK]
    assert bank and len(bank) == len(wire)
    for b, w in zip(bank, wire, strict=True):
        assert b.error is not None and w.error is not None
        assert (b.error.kind, b.error.status, b.error.retry_after_s) == (
            w.error.kind,
            w.error.status,
            w.error.retry_after_s,
        )
        has = {name: getattr(b, name) is not None for name in RECORDED}
        assert has == {name: getattr(w, name) is not None for name in RECORDED}, (b, w)
        assert len(b.chunks) == len(w.chunks)
        assert b.output_tokens == w.output_tokens
