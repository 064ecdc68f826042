"""The queueing rule reads the swing of identical requests' first tokens, except where
the path loses packets: a loss no counter saw swings them as a queue would. The wait a
server's ``: keep-alive`` comments tell is its queue: cited beside the client's
finding, and a finding of its own from the server's bar."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from latdoc import Kind
from latdoc.analysis.attribution import with_the_requests_ahead
from latdoc.analysis.facts import gather_facts
from latdoc.analysis.kinds.queueing import SERVER_QUEUE_MIN_MS, queueing, slot_scale
from latdoc.analysis.length import fit_length_curve, length_points
from latdoc.analysis.loss import Counts, Loss
from latdoc.analysis.noticeable import request_parts
from latdoc.analysis.queue_comments import keepalive_facts
from latdoc.model import Finding
from latdoc.records import Sample, Step
from latdoc.reference import healthy_reference
from report_samples import MS, make_trace

SWINGING = {
    "ttft_cv": 0.6,
    "ttft_p95_over_p50": 2.5,
    "ttft_p50_ms": 200.0,
    "ttft_mean_ms": 260.0,
    "ttft_quiet_ms": 150.0,
    "concurrent_over_sequential": None,
    "concurrent_ttft_p50_ms": None,
    "sequential_n": 20,
    "concurrency": None,
}


def _namespace(**facts: Any) -> Any:
    """Facts of a run with no length curve and no keep-alive comments, but ``facts``."""
    return SimpleNamespace(
        **{"curve": None, "long_reference_tokens": None, "keepalive": {}, **facts}
    )


def _facts(loss: Loss | None) -> Any:
    return _namespace(load=dict(SWINGING), server=None, server_account=None, loss=loss)


def _loss(retransmits: int, losing: int) -> Loss:
    counts = Counts(retransmits=retransmits, sent=400, out_of_order=0, received=400)
    return Loss(counts, requests=20, losing=losing, rttvar_ms=5.0, rtt_ms=80.0)


def test_a_swing_on_a_clean_path_is_named_queueing_with_the_mean_over_a_quiet_request() -> None:
    finding = queueing(_facts(None))
    assert finding is not None and finding.kind == Kind.QUEUEING
    assert "swings" in finding.title
    assert finding.share_ms == 110.0
    assert queueing(_facts(_loss(retransmits=1, losing=1))) is not None


def test_the_same_swing_on_a_lossy_path_is_left_to_the_path() -> None:
    loss = _loss(retransmits=40, losing=8)
    assert loss.lossy
    assert queueing(_facts(loss)) is None


def test_a_rise_under_load_on_a_lossy_path_counts_above_one_retransmission_timeout() -> None:
    loss = _loss(retransmits=40, losing=8)  # 80 ms round trip, variance 5 ms: RTO 200 ms

    def burst(rise_ms: float, path: Loss | None) -> Any:
        quiet = {**SWINGING, "ttft_cv": 0.1, "ttft_p95_over_p50": 1.1, "concurrency": 4.0}
        conc = quiet["ttft_p50_ms"] + rise_ms
        load = {**quiet, "concurrent_ttft_p50_ms": conc, "concurrent_over_sequential": conc / 200}
        return _namespace(load=load, server=None, loss=path)

    # 190 ms more at four at once: a queue on a clean path, one lost segment's timeout
    # on a lossy one.
    clean = queueing(burst(190.0, None))
    assert clean is not None and clean.share_ms == 190.0
    assert queueing(burst(190.0, loss)) is None
    lossy = queueing(burst(400.0, loss))
    assert lossy is not None and lossy.share_ms == 400.0
    slow_path = replace(loss, rtt_ms=300.0, rttvar_ms=50.0)  # its timeout is 500 ms
    assert queueing(burst(400.0, slow_path)) is None


def _burst(slot_ms: float, waited: float | None, **more: Any) -> Any:
    """Four sent together at 200 ms alone, three of them a slot's time later each (one
    slot): the burst's mean is 1.5 slot times above a request alone."""
    quiet = {**SWINGING, "ttft_cv": 0.1, "ttft_p95_over_p50": 1.1, "concurrency": 4.0}
    mean = 200.0 + 1.5 * slot_ms
    load = {
        **quiet,
        "concurrent_ttft_p50_ms": mean,
        "concurrent_ttft_mean_ms": mean,
        "concurrent_over_sequential": mean / 200.0,
        "slot_ms": slot_ms,
        "concurrent_waited_share": waited,
    }
    return _namespace(load=load, server=None, loss=None, network={}, **more)


def test_a_queue_for_slots_is_the_wait_of_requests_kept_in_flight() -> None:
    # Kept four in flight on one slot, a request waits for the three ahead of it: three
    # slot times (Little's law), where one burst of four waits 1.5 on average.
    one_slot = queueing(_burst(400.0, 0.75))
    assert one_slot is not None and one_slot.share_ms == pytest.approx(1200.0)
    assert one_slot.excess_ms == one_slot.beyond_alone_ms == one_slot.share_ms
    assert one_slot.evidence["burst_rise_ms"] == pytest.approx(600.0)
    assert "3.00 slot times" in str(one_slot.rule)
    # Two of four waited: two slots, and one slot time a request.
    two_slots = queueing(_burst(400.0, 0.5))
    assert two_slots is not None and two_slots.share_ms == pytest.approx(400.0)
    # Every request waited (a server busy with others' requests): no slots to read, the
    # burst's own rise.
    busy = queueing(_burst(400.0, 1.0))
    assert busy is not None and busy.share_ms == pytest.approx(600.0)


def test_at_the_users_longer_prompt_each_request_holds_its_slot_longer() -> None:
    # TTFT 200 ms at 128 tokens, 600 at 2,048: a request of 2,048 tokens holds its slot
    # 400 ms longer than the 400 ms of the short ones sent together.
    points = length_points([(128, 200.0)] * 3 + [(2048, 600.0)] * 3)
    curve = fit_length_curve(points)
    facts = _burst(
        400.0, 0.75, curve=curve, long_reference_tokens=2048, reference=healthy_reference()
    )
    assert slot_scale(facts) == pytest.approx(2.0)
    found = queueing(facts)
    assert found is not None and found.share_ms == pytest.approx(2400.0)
    assert "2,048 prompt tokens holds its slot 2.0× as long as one of 128" in str(found.rule)


def test_the_facts_read_a_slots_time_and_the_share_of_a_burst_that_waited_for_one() -> None:
    # Warm requests alone hold the server 1,615 ms (a 380 ms wait, the first token's 35
    # and a 1.2 s stream); of four sent together, three waited one, two and three of those.
    alone = [Sample(Step.LOAD, make_trace(dns=None, connect=None, tls=None), 128) for _ in range(8)]
    burst = [
        Sample(
            Step.LOAD,
            make_trace(dns=None, connect=None, tls=None, wait=380.0 + k * 1615.0),
            128,
            concurrency=4,
        )
        for k in range(4)
    ]
    load = gather_facts([*alone, *burst], None).load
    assert load["slot_ms"] == pytest.approx(380.0 + 35.0 + 1200.0)
    assert load["concurrent_waited_share"] == pytest.approx(0.75)
    found = queueing(gather_facts([*alone, *burst], None))
    assert found is not None and found.share_ms == pytest.approx(3 * 1615.0)


def test_an_untold_server_wait_on_a_lossy_path_counts_above_one_retransmission_timeout() -> None:
    # The server told its prefill and no queue: the wait is what the client's first token
    # leaves. A lab on a 40 ms link losing 8% of segments measured 41 ms of it alone and
    # 196 ms among concurrent requests, whose client numbers named no queue.
    loss = _loss(retransmits=40, losing=8)  # its timeout is 200 ms

    def told(alone_ms: float, together_ms: float, path: Loss | None) -> Any:
        quiet = {**SWINGING, "ttft_cv": 0.1, "ttft_p95_over_p50": 1.1}
        numbers = {"requests": 24.0, "alone_wait_ms": alone_ms, "concurrent_wait_ms": together_ms}
        account = SimpleNamespace(numbers=numbers, source="Server-Timing")
        return _namespace(load=quiet, server=account, loss=path)

    clean = queueing(told(41.0, 196.0, None))
    assert clean is not None and clean.share_ms == pytest.approx(155.0)
    assert "beyond their prefill" in clean.title
    assert queueing(told(41.0, 196.0, loss)) is None
    lossy = queueing(told(41.0, 441.0, loss))
    assert lossy is not None and lossy.share_ms == pytest.approx(400.0)
    # A queue the server tells is its own, whatever the path.
    numbers = {"requests": 24.0, "queue_ms": 150.0}
    own = SimpleNamespace(numbers=numbers, source="Server-Timing")
    facts = _namespace(load=told(0, 0, None).load, server=own, loss=loss)
    assert (found := queueing(facts)) is not None and found.share_ms == 150.0


def _kept(alone: float | None, together: float | None, found: bool = False) -> Any:
    """Facts whose keep-alive comments tell these waits; the client's numbers swing
    (and fire the rule) where ``found``."""
    quiet = {**SWINGING, "ttft_cv": 0.1, "ttft_p95_over_p50": 1.1}
    load = {**(SWINGING if found else quiet), "concurrency": 4.0}
    told = {"keepalive_n": 12.0, "keepalive_alone_ms": alone, "keepalive_concurrent_ms": together}
    return _namespace(load=load, server=None, loss=None, keepalive=told)


def test_a_keep_alive_wait_that_rises_under_load_is_queueing() -> None:
    finding = queueing(_kept(alone=5.0, together=305.0))
    assert finding is not None and finding.kind == Kind.QUEUEING
    assert finding.title == "The server kept requests waiting in its queue under load"
    assert finding.share_ms == 300.0 and finding.n == 12
    assert "a request among 4 waiting 305 ms on average" in finding.rule
    assert finding.evidence["keepalive_concurrent_ms"] == 305.0


def test_a_keep_alive_wait_alone_is_queueing_from_the_servers_bar() -> None:
    finding = queueing(_kept(alone=SERVER_QUEUE_MIN_MS, together=None))
    assert finding is not None and finding.share_ms == SERVER_QUEUE_MIN_MS
    assert finding.title == "The server keeps requests waiting in its queue"
    assert queueing(_kept(alone=SERVER_QUEUE_MIN_MS - 1, together=None)) is None


def test_a_keep_alive_wait_below_the_bar_names_nothing() -> None:
    assert queueing(_kept(alone=40.0, together=120.0)) is None
    assert queueing(_kept(alone=0.0, together=0.0)) is None


def test_a_queue_the_client_saw_cites_the_keep_alive_wait_and_keeps_its_share() -> None:
    alone = queueing(_facts(None))
    cited = queueing(_kept(alone=20.0, together=300.0, found=True))
    assert alone is not None and cited is not None
    assert cited.share_ms == alone.share_ms and cited.title == alone.title
    assert cited.rule.startswith(alone.rule)
    assert cited.rule.endswith(
        "; by the server's ': keep-alive' comments, a request among 4 waited 300 ms on "
        "average in its queue (one sent alone 20 ms)"
    )
    assert cited.evidence["keepalive_alone_ms"] == 20.0
    quiet = queueing(_kept(alone=0.0, together=0.0, found=True))
    assert quiet is not None and quiet.rule == alone.rule


def _sample(step: Step, concurrency: int, waited_ms: float | None) -> Sample:
    """A request whose stream carried keep-alive comments up to ``waited_ms`` after its
    first byte (none: ``None``)."""
    trace = make_trace()
    assert trace.first_byte_ns is not None
    last = None if waited_ms is None else trace.first_byte_ns + round(waited_ms * MS)
    trace = replace(
        trace,
        keepalive_comments=0 if last is None else 3,
        first_keepalive_ns=last,
        last_keepalive_ns=last,
    )
    return Sample(step, trace, target_prompt_tokens=128, concurrency=concurrency)


def test_the_facts_read_the_wait_alone_and_together() -> None:
    alone = [_sample(Step.LOAD, 1, w) for w in (None, None, 30.0)]
    burst = [_sample(Step.LOAD, 4, w) for w in (None, 100.0, 200.0, 300.0)]
    samples = alone + burst
    told = keepalive_facts(samples, alone)
    assert told == {
        "keepalive_n": 4.0,
        "keepalive_alone_ms": 0.0,
        "keepalive_concurrent_ms": pytest.approx(150.0),
    }
    assert keepalive_facts(samples[:2], samples[:2]) == {}


def test_the_typical_request_shows_the_keep_alive_wait_as_the_servers() -> None:
    waits = (250.0, 250.0, None)
    cold = [replace(_sample(Step.NETWORK, 1, w), cold=True) for w in waits]
    parts = request_parts(cold)
    plain = request_parts([replace(s, trace=make_trace()) for s in cold])
    assert parts is not None and plain is not None
    assert parts.server_wait_ms == pytest.approx(250.0)
    assert parts.prefill_ms == pytest.approx(plain.prefill_ms - 250.0)
    assert parts.total_ms == pytest.approx(plain.total_ms)
    assert ("server wait", pytest.approx(250.0)) in parts.items()
    assert plain.server_wait_ms is None


def test_a_kind_spent_in_the_slot_saves_its_excess_for_each_request_ahead_too() -> None:
    # Kept four in flight on one slot, a request waits three slot times: a prefill 500 ms
    # past healthy makes each of the three ahead 500 ms longer too, so fixing it saves
    # 2 s; a slow lookup, spent before the request reaches the server, saves its own.
    queue = Finding(Kind.QUEUEING, "q", "r", {"slot_times_waited": 3.0}, 3000.0, 1.0)
    prefill = Finding(Kind.INPUT_LENGTH, "i", "r", {}, 600.0, 1.0, excess_ms=500.0)
    lookup = Finding(Kind.NETWORK_SETUP, "n", "r", {}, 300.0, 1.0, excess_ms=100.0)
    out = {f.kind: f for f in with_the_requests_ahead((queue, prefill, lookup))}
    assert out[Kind.INPUT_LENGTH].excess_ms == 2000.0
    assert out[Kind.INPUT_LENGTH].share_ms == 600.0
    assert out[Kind.INPUT_LENGTH].evidence["excess_of_requests_ahead_ms"] == 1500.0
    assert out[Kind.NETWORK_SETUP] is lookup and out[Kind.QUEUEING] is queue
    # With no queue for slots nothing moves.
    assert with_the_requests_ahead((prefill, lookup)) == (prefill, lookup)
