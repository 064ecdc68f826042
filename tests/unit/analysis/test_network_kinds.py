"""The network kinds read from what the probe records of a connection: a dead address
family and a slow address (the happy-eyeballs attempts), a lossy path (TCP_INFO's
counters, told apart from a long round trip and from the server's stalls), and TLS
resumption measured beside the full handshake."""

from __future__ import annotations

from dataclasses import replace

import pytest

from latdoc import Kind, RunContext, Sample, Step, build_diagnosis
from latdoc.analysis.facts import gather_facts
from latdoc.analysis.loss import Counts, request_counts
from latdoc.records import Chunk, ConnectAttempt, RequestTrace, TcpInfo
from latdoc.store.codec import trace_from_record, trace_to_record
from report_samples import ENDPOINT, make_trace

CONTEXT = RunContext("net", ENDPOINT, "m", cpu_count=2)
MS = 1_000_000


def _numbered(samples: list[Sample]) -> list[Sample]:
    return [
        Sample(s.step, s.trace, s.target_prompt_tokens, s.concurrency, s.cold, i)
        for i, s in enumerate(samples)
    ]


def _raced(trace: RequestTrace, *attempts: tuple[str, str, float, float]) -> RequestTrace:
    """``trace`` with connection attempts (address, outcome, start after DNS, ms)."""
    assert trace.dns_done_ns is not None
    return replace(
        trace,
        connect_attempts=tuple(
            ConnectAttempt(
                address,
                6 if ":" in address else 4,
                trace.dns_done_ns + round(start * MS),
                round(ms * MS),
                outcome,
            )
            for address, outcome, start, ms in attempts
        ),
    )


def _network(cold: list[RequestTrace], wait: float = 400.0) -> list[Sample]:
    samples = [Sample(Step.NETWORK, t, 128, cold=True) for t in cold]
    for i in range(4):
        warm = make_trace(dns=None, connect=None, tls=None, wait=wait + i)
        samples.append(Sample(Step.NETWORK, warm, 128))
    return _numbered(samples)


def test_a_black_holed_family_is_named_with_its_cost_and_not_as_a_far_region() -> None:
    cold = [
        _raced(
            make_trace(connect=272.0, wait=400.0 + i),
            ("2001:db8::7", "cancelled", 0.0, 272.0),
            ("203.0.113.7", "connected", 250.0 + i, 22.0 - i),
        )
        for i in range(4)
    ]
    d = build_diagnosis(_network(cold), CONTEXT)
    (setup,) = [f for f in d.findings if f.kind == Kind.NETWORK_SETUP]
    assert setup.title.startswith("IPv6 never connects")
    assert setup.evidence["dead_family"] == 6
    assert setup.evidence["dead_family_cost_ms"] == pytest.approx(251.5)
    assert setup.evidence["rtt_ms"] == pytest.approx(20.5)
    assert Kind.NETWORK_PATH not in {f.kind for f in d.findings}
    assert "address_family" in [r.key for r in d.remedies]


def test_a_family_that_connected_once_is_not_dead() -> None:
    cold = [
        _raced(
            make_trace(connect=272.0),
            ("2001:db8::7", "cancelled", 0.0, 272.0),
            ("203.0.113.7", "connected", 250.0, 22.0),
        ),
        _raced(make_trace(connect=22.0), ("2001:db8::7", "connected", 0.0, 22.0)),
    ]
    d = build_diagnosis(_network(cold), CONTEXT)
    assert not any(f.title.startswith("IPv6") for f in d.findings)


def test_the_slow_one_of_several_a_records_is_named() -> None:
    cold = [
        _raced(make_trace(connect=ms), (address, "connected", 0.0, ms))
        for address, ms in [("192.0.2.1", 20.0), ("192.0.2.9", 95.0)] * 3
    ]
    d = build_diagnosis(_network(cold), CONTEXT)
    (setup,) = [f for f in d.findings if f.kind == Kind.NETWORK_SETUP]
    assert setup.title == "One of the host's addresses connects slowly: 192.0.2.9"
    assert setup.evidence["slow_address_connect_ms"] == pytest.approx(95.0)
    assert setup.evidence["fast_address_connect_ms"] == pytest.approx(20.0)


def _tcp(retransmits: int, sent: int, out_of_order: int, received: int) -> TcpInfo:
    return TcpInfo(
        rtt_us=20_000, rttvar_us=9_000, min_rtt_us=18_000, retransmits=retransmits,
        snd_cwnd=10, bytes_acked=None, bytes_received=None, data_segments_out=sent,
        data_segments_in=received, out_of_order_in=out_of_order,
    )  # fmt: skip


def _stalled(trace: RequestTrace, gap_ms: float) -> RequestTrace:
    """``trace`` with a pause of ``gap_ms`` after its fifth chunk."""
    chunks = list(trace.chunks)
    shift = round(gap_ms * MS)
    moved = [Chunk(c.t_ns + shift, c.chars, c.tokens) for c in chunks[5:]]
    done = None if trace.done_ns is None else trace.done_ns + shift
    return replace(trace, chunks=(*chunks[:5], *moved), done_ns=done)


def _streams(lossy: bool) -> list[Sample]:
    """Twelve requests on one connection, each paused 400 ms mid-stream; on a lossy path
    their connection lost segments during each."""
    samples = []
    for i in range(12):
        plain = make_trace(dns=None, connect=None, tls=None, wait=300.0 + i, stream=100.0)
        trace = _stalled(plain, 400.0)
        k = i + 1
        if lossy:
            trace = replace(trace, tcp_info=_tcp(k, 20 * k, 5 * k, 40 * k))
        else:
            trace = replace(trace, tcp_info=_tcp(0, 20 * k, 0, 40 * k))
        samples.append(Sample(Step.LOAD, trace, 128))
    return _numbered(samples)


def test_each_request_counts_its_own_segments_on_a_reused_connection() -> None:
    traces = [s.trace for s in _streams(lossy=True)][:3]
    assert request_counts(traces) == [Counts(1, 20, 5, 40)] * 3
    fresh = replace(traces[2], new_connection=True)
    assert request_counts([traces[0], fresh]) == [Counts(1, 20, 5, 40), Counts(3, 60, 15, 120)]


def test_pauses_on_a_lossy_path_are_loss_not_stalls() -> None:
    d = build_diagnosis(_streams(lossy=True), CONTEXT)
    kinds = {f.kind: f for f in d.findings}
    assert Kind.STALLS not in kinds
    loss = kinds[Kind.NETWORK_PATH]
    assert loss.title == "The path loses packets"
    assert loss.evidence["retransmit_share"] == pytest.approx(1 / 20)
    assert loss.evidence["out_of_order_share"] == pytest.approx(5 / 40)
    gap = 400.0 + 100.0 / 9  # the pause and the stream's own gap
    assert loss.evidence["path_stall_ms"] == pytest.approx(12 * gap)
    assert loss.share_ms == pytest.approx(gap)
    assert "lossy_path" in [r.key for r in d.remedies]


def _with_uncounted_pause(gap_ms: float) -> list[Sample]:
    """The lossy streams, and one more request on a connection of its own whose pause of
    ``gap_ms`` no counter saw (its segments all in order, none resent)."""
    samples = _streams(lossy=True)
    plain = make_trace(dns=None, connect=None, tls=None, wait=300.0, stream=100.0)
    quiet = replace(_stalled(plain, gap_ms), new_connection=True, connection_id=99)
    quiet = replace(quiet, tcp_info=_tcp(0, 20, 0, 40))
    return _numbered([*samples, Sample(Step.LOAD, quiet, 128)])


def test_on_a_lossy_path_an_uncounted_pause_within_one_timeout_is_the_paths() -> None:
    # The path's round trip is 20 ms, its variance 9 ms: its timeout is Linux's least,
    # 200 ms. A pause of 170 ms (a tail-loss probe's two round trips, or a timeout) in a
    # request that counted no loss is a loss resent by a timer, not the server's stall.
    facts = gather_facts(_with_uncounted_pause(170.0), None)
    assert facts.loss is not None and facts.loss.recovery_ms == pytest.approx(200.0)
    assert facts.stalls == []
    assert len(facts.path_stalls) == 13
    d = build_diagnosis(_with_uncounted_pause(170.0), CONTEXT)
    assert Kind.STALLS not in {f.kind for f in d.findings}
    # A longer pause than the path's timeout is the server's, lossy path or not.
    longer = gather_facts(_with_uncounted_pause(900.0), None)
    assert [gap for _, gap in longer.stalls] == [pytest.approx(900.0 + 100.0 / 9)]


def test_the_same_pauses_without_loss_are_the_servers_stalls() -> None:
    d = build_diagnosis(_streams(lossy=False), CONTEXT)
    kinds = {f.kind: f for f in d.findings}
    assert Kind.STALLS in kinds
    assert Kind.NETWORK_PATH not in kinds


def test_a_long_round_trip_without_loss_is_not_loss() -> None:
    cold = [make_trace(connect=150.0 + i) for i in range(4)]
    samples = _network(cold)
    samples = [replace(s, trace=replace(s.trace, tcp_info=_tcp(0, 300, 0, 300))) for s in samples]
    d = build_diagnosis(samples, CONTEXT)
    (path,) = [f for f in d.findings if f.kind == Kind.NETWORK_PATH]
    assert path.title == "High round-trip time to the endpoint"


def test_resumed_tls_is_measured_beside_the_full_handshake() -> None:
    full = [replace(make_trace(tls=60.0 + i), tls_resumed=False) for i in range(3)]
    resumed = replace(make_trace(tls=25.0), tls_session_offered=True, tls_resumed=True)
    facts = gather_facts(_network([*full, resumed]), None)
    assert facts.network["tls_ms"] == pytest.approx(61.0)
    assert facts.network["tls_resumed_ms"] == pytest.approx(25.0)
    assert facts.network["cold_n"] == 3


def test_a_server_that_closes_connections_gets_tls_resumption_with_its_gain() -> None:
    full = [replace(make_trace(tls=160.0 + i), tls_resumed=False) for i in range(3)]
    resumed = replace(make_trace(tls=40.0), tls_session_offered=True, tls_resumed=True)
    samples = [Sample(Step.NETWORK, t, 128, cold=True) for t in [*full, resumed]]
    samples += [Sample(Step.NETWORK, replace(make_trace(tls=161.0), tls_resumed=False), 128)] * 4
    d = build_diagnosis(_numbered(samples), CONTEXT)
    (remedy,) = [r for r in d.remedies if r.key == "tls_resumption"]
    assert remedy.predicted_gain_ms == pytest.approx(121.0)


def test_traces_recorded_before_attempts_and_loss_counters_still_load() -> None:
    trace = replace(
        make_trace(),
        tls_resumed=True,
        tls_session_offered=True,
        tcp_info=_tcp(1, 10, 2, 20),
    )
    trace = _raced(trace, ("2001:db8::7", "failed", 0.0, 1.0), ("203.0.113.7", "connected", 1, 20))
    record = trace_to_record(trace)
    assert trace_from_record(record) == trace
    for key in ("connect_attempts", "tls_resumed", "tls_session_offered"):
        del record[key]
    for key in ("lost", "backoff_retransmits", "data_segments_out", "data_segments_in"):
        del record["tcp_info"][key]
    del record["tcp_info"]["out_of_order_in"]
    old = trace_from_record(record)
    assert old.connect_attempts == () and old.tls_resumed is None
    assert old.tls_session_offered is False
    assert old.tcp_info is not None and old.tcp_info.data_segments_out is None
    bad = trace_to_record(trace)
    bad["connect_attempts"][0]["outcome"] = "maybe"
    with pytest.raises(ValueError, match="outcome"):
        trace_from_record(bad)
