"""The server's own timing: read from each source, split from the client's, used by the verdict.

Hand-made traces pin the arithmetic; the simulated endpoint (which tells its queue
and prefill in ``Server-Timing``) checks that a queue on one slot comes out as
queueing, told by the server, not as prefill.
"""

from __future__ import annotations

import dataclasses

import pytest

from latdoc import (
    Chunk,
    Kind,
    RequestTrace,
    RunContext,
    Sample,
    Step,
    build_diagnosis,
    diagnosis_to_dict,
    render_diagnosis,
    render_html,
    render_text,
)
from latdoc.analysis.buffering import stream_burst
from latdoc.analysis.servertime import server_account, server_timing_of, split_ttft
from report_samples import make_trace

CONTEXT = RunContext("test", "https://api.example.com/v1", "m", cpu_count=2)


def _told(timing: dict[str, float], **changes: object) -> RequestTrace:
    return dataclasses.replace(make_trace(), server_timing=timing, **changes)


@pytest.mark.parametrize(
    ("timing", "expected"),
    [
        (
            {"prompt_ms": 120.5, "predicted_ms": 800.0, "predicted_per_token_ms": 8.0},
            (None, 120.5, 800.0, None, "llama.cpp timings"),
        ),
        (
            {"queue": 40.0, "prefill": 90.0, "tpot": 5.0},
            (40.0, 90.0, 5.0 * 99, None, "Server-Timing"),
        ),
        ({"openai-processing": 350.0}, (None, None, None, 350.0, "openai-processing-ms")),
    ],
    ids=["llama.cpp", "server-timing", "openai"],
)
def test_each_source_reads_into_one_view(
    timing: dict[str, float], expected: tuple[object, ...]
) -> None:
    told = server_timing_of(_told(timing))
    assert told is not None
    assert (
        told.queue_ms,
        told.prefill_ms,
        told.decode_ms,
        told.processing_ms,
        told.source,
    ) == expected
    assert server_timing_of(make_trace()) is None
    assert server_timing_of(_told({"load": 1.0})) is None


def test_ttft_splits_into_network_queue_and_prefill() -> None:
    # make_trace: DNS 12 + TCP 24 + TLS 41, send 2.5, wait 380, first token 35 → TTFT 494.5
    split = split_ttft(_told({"prompt_ms": 300.0}))
    assert split is not None
    assert split.network_ms == pytest.approx(77.0 + 2.5 + 24.0)
    assert split.prefill_ms == 300.0
    assert not split.queue_told
    assert split.queue_ms == pytest.approx(494.5 - 103.5 - 300.0)
    assert split.residual_ms == 0.0 and not split.disagrees
    told = split_ttft(_told({"queue": 50.0, "prefill": 300.0}))
    assert told is not None and told.queue_told
    assert told.residual_ms == pytest.approx(494.5 - 103.5 - 350.0)


def test_the_clients_own_delay_is_the_clients_share_never_the_servers_queue() -> None:
    plain = _told({"prompt_ms": 300.0})
    assert plain.tls_done_ns is not None and plain.sent_ns is not None
    # The last 2 ms before the send: the client's event loop held the request back.
    late = dataclasses.replace(plain, write_start_ns=plain.tls_done_ns + 2_000_000)
    before, after = split_ttft(plain), split_ttft(late)
    assert before is not None and after is not None
    assert after.client_ms == pytest.approx(before.client_ms + 2.0)
    assert after.network_ms == pytest.approx(before.network_ms - 2.0)
    assert after.queue_ms == pytest.approx(before.queue_ms)


def test_a_server_that_claims_more_than_the_client_waited_is_flagged_everywhere() -> None:
    samples = [
        Sample(Step.NETWORK, _told({"prompt_ms": 2000.0}), cold=True, index=i) for i in range(3)
    ]
    account = server_account(samples)
    assert account is not None
    (flag,) = account.disagreements
    assert (flag.requests, flag.of) == (3, 3)
    assert flag.worst_ms == pytest.approx(2000.0 - (494.5 - 103.5))
    d = build_diagnosis(samples, CONTEXT)
    text = " ".join(render_text(render_diagnosis(d), 140).split())
    assert "Client and server disagree: the server's prefill (2000.0 ms)" in text
    doc = diagnosis_to_dict(d)
    assert doc["server"]["disagreements"][0]["requests"] == 3
    assert doc["server"]["prefill_ms"] == 2000.0
    assert "Client and server disagree:" in render_html(d, samples)
    honest = [dataclasses.replace(s, trace=_told({"prompt_ms": 350.0})) for s in samples]
    assert build_diagnosis(honest, CONTEXT).server.disagreements == ()  # type: ignore[union-attr]


def test_an_engine_that_counted_more_prefill_than_told_is_shared() -> None:
    samples = [
        Sample(Step.NETWORK, _told({"prompt_ms": 300.0}), cold=True, index=i) for i in range(3)
    ]
    source = "llama.cpp /metrics at http://h/metrics"
    shared = dataclasses.replace(CONTEXT, server_metrics={"prefill_total_ms": 1500.0},
                                 server_metrics_source=source)  # fmt: skip
    account = build_diagnosis(samples, shared).server
    assert account is not None and account.metrics["told_prefill_total_ms"] == 900.0
    (flag,) = account.disagreements
    assert "others share this server" in flag.what and flag.worst_ms == 600.0
    alone = dataclasses.replace(shared, server_metrics={"prefill_total_ms": 905.0})
    assert build_diagnosis(samples, alone).server.disagreements == ()  # type: ignore[union-attr]


def test_the_typical_request_takes_its_prefill_from_the_server() -> None:
    samples = [
        Sample(Step.NETWORK, _told({"prompt_ms": 300.0}), cold=True, index=i) for i in range(3)
    ]
    parts = build_diagnosis(samples, CONTEXT).typical_request
    assert parts is not None
    assert parts.prefill_ms == 300.0
    assert parts.server_wait_ms == pytest.approx(380.0 + 35.0 - 300.0)
    assert parts.total_ms == pytest.approx(make_trace().total_ms - 0.15)
    d = build_diagnosis(samples, CONTEXT)
    assert d.verdict.primary is Kind.HEALTHY
    assert 'class="share p-queue"' in render_html(d, samples)
    text = " ".join(render_text(render_diagnosis(d), 120).split())
    assert "server wait 115.0 ms" in text and "prefill 300.0 ms" in text
    plain = build_diagnosis([dataclasses.replace(s, trace=make_trace()) for s in samples], CONTEXT)
    assert plain.typical_request is not None and plain.typical_request.server_wait_ms is None
    assert plain.server is None


def test_a_short_stream_sent_in_one_piece_is_not_buffering() -> None:
    base = _told({"prompt_ms": 20.0, "predicted_ms": 900.0})
    assert base.first_token_ns is not None
    one_read = tuple(Chunk(base.first_token_ns, 4, 1) for _ in range(6))
    short = dataclasses.replace(base, chunks=one_read, output_tokens=6)
    assert stream_burst(short) is None, "a server may send a short answer in one piece"
    # The same six events carrying the hundred tokens the usage counts, made over 900 ms
    # and read at once: held whole, whatever the server's tokens an event.
    several = stream_burst(dataclasses.replace(base, chunks=one_read, output_tokens=100))
    assert several is not None and several.whole and several.held_ms == 900.0
    three = dataclasses.replace(base, chunks=one_read[:3], output_tokens=100)
    assert stream_burst(three) is None, "three pieces may be the server's own"
    held = tuple(Chunk(base.first_token_ns, 4, 1) for _ in range(40))
    burst = stream_burst(dataclasses.replace(base, chunks=held))
    assert burst is not None and burst.reads == 1 and burst.held_ms == 900.0
    fast = _told({"prompt_ms": 20.0, "predicted_ms": 30.0}, chunks=held)
    assert stream_burst(fast) is None, "a server that made them in 30 ms held nothing back"


def test_a_stream_passed_on_a_buffer_at_a_time_is_held_by_its_first_burst() -> None:
    """Bursts of 20 events every 200 ms: the hop's buffer fills at one token each 10 ms, so
    the first token waited 19 tokens' time, read from the arrivals' own pace where the
    server does not tell, and from the server's time per token where it does."""
    base = make_trace()
    assert base.first_token_ns is not None
    step_ns = 200 * 1_000_000
    bursts = tuple(
        Chunk(base.first_token_ns + b * step_ns, 4, 1) for b in range(4) for _ in range(20)
    )
    untold = stream_burst(dataclasses.replace(base, chunks=bursts, server_timing={}))
    assert untold is not None and not untold.whole and untold.first_burst == 20
    assert untold.held_ms == pytest.approx(19 * 600 / 60)
    told = stream_burst(_told({"prompt_ms": 20.0, "predicted_ms": 79 * 8.0}, chunks=bursts))
    assert told is not None and told.held_ms == pytest.approx(19 * 8.0)
    # The same events with reads of two at a time (a client's loop late by a token) are no
    # buffer; nor is a first read that carried one event.
    pairs = tuple(Chunk(base.first_token_ns + (i // 2) * 20_000_000, 4, 1) for i in range(80))
    assert stream_burst(dataclasses.replace(base, chunks=pairs, server_timing={})) is None
    lone = (Chunk(base.first_token_ns - step_ns, 4, 1), *bursts[1:])
    assert stream_burst(dataclasses.replace(base, chunks=lone, server_timing={})) is None
