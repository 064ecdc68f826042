"""Decode and stall rules on streams whose events carry several tokens (hand-built traces).

A server may write several tokens per event. OpenAI's chat says how many only once,
in the usage at the end, so the probe counts one token a chunk (not exact): the rules
must read the gap between two 8-token events as eight tokens' time, not one slow token
and not a stall.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from latdoc.analysis.facts import gather_facts, stream_tpot_ms
from latdoc.analysis.kinds.decode import decode, streamed_tokens, token_tpot_ms
from latdoc.analysis.signals import find_stalls
from latdoc.model import Kind
from latdoc.records import Chunk, RequestTrace, Sample, Step

MS = 1_000_000


def _stream(
    sizes: list[int],
    ms_per_token: float,
    *,
    exact: bool = False,
    hidden: int = 0,
    pause_after: int | None = None,
) -> RequestTrace:
    """A request whose events carry ``sizes`` tokens, each sent when its last token is
    decoded at ``ms_per_token``; the chunks count one token each unless ``exact``, the
    usage counts them all and ``hidden`` reasoning tokens before them."""
    first = 100 * MS
    chunks, at = [], first
    for i, size in enumerate(sizes):
        if i:
            at += round(size * ms_per_token * MS)
        if i and pause_after == i:
            at += 800 * MS
        chunks.append(Chunk(at, 6 * size, size if exact else 1))
    total = sum(sizes) + hidden
    return RequestTrace(
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        t0_ns=0,
        url="http://lab",
        model="m",
        dialect="chat",
        sent_ns=1 * MS,
        first_byte_ns=5 * MS,
        first_token_ns=first,
        done_ns=at + MS,
        status=200,
        chunks=tuple(chunks),
        chunk_tokens_exact=exact,
        output_tokens=total,
        output_tokens_exact=True,
        reasoning_tokens=hidden or None,
    )


def test_an_eight_token_event_gap_is_eight_tokens_time() -> None:
    trace = _stream([8] * 5, 15.0)
    assert stream_tpot_ms(trace) == pytest.approx(120.0)
    assert token_tpot_ms(trace) == pytest.approx(15.0)
    assert token_tpot_ms(_stream([8] * 5, 15.0, exact=True)) == pytest.approx(15.0)


def test_one_token_events_read_as_before() -> None:
    trace = _stream([1] * 30, 20.0)
    assert token_tpot_ms(trace) == pytest.approx(stream_tpot_ms(trace)) == pytest.approx(20.0)


def test_hidden_reasoning_is_not_counted_among_the_streamed_tokens() -> None:
    trace = _stream([8] * 5, 15.0, hidden=20)
    assert streamed_tokens(trace) == 40
    assert token_tpot_ms(trace) == pytest.approx(15.0)


def test_irregular_events_read_at_the_token_rate() -> None:
    rng = random.Random(3)
    trace = _stream([rng.randint(1, 8) for _ in range(12)], 15.0)
    tpot = token_tpot_ms(trace)
    assert tpot is not None and 10.0 < tpot < 22.0


def _samples(*traces: RequestTrace) -> list[Sample]:
    return [Sample(Step.NETWORK, t, index=i) for i, t in enumerate(traces)]


@pytest.mark.parametrize("sizes", [[4] * 8, [8] * 4, [1, 8, 3, 5, 8, 2, 6, 7]])
def test_a_healthy_rate_in_several_tokens_per_event_is_not_decode(sizes: list[int]) -> None:
    facts = gather_facts(_samples(*(_stream(sizes, 15.0) for _ in range(5))), None)
    assert decode(facts) is None
    assert facts.stalls == []


def test_a_slow_rate_in_eight_tokens_per_event_is_decode_at_its_token_rate() -> None:
    facts = gather_facts(_samples(*(_stream([8] * 4, 60.0) for _ in range(5))), None)
    finding = decode(facts)
    assert finding is not None and finding.kind is Kind.DECODE
    assert finding.evidence["tpot_ms"] == pytest.approx(60.0)


def test_gaps_of_several_tokens_are_no_stall_but_a_pause_among_them_is() -> None:
    rng = random.Random(9)
    sizes = [rng.randint(1, 8) for _ in range(16)]
    assert find_stalls(_stream(sizes, 20.0).itl_ms) == []
    assert find_stalls(_stream([8] * 8, 20.0).itl_ms) == []
    (stall,) = find_stalls(_stream([8] * 8, 20.0, pause_after=4).itl_ms)
    assert stall.after_token == 4 and stall.gap_ms == pytest.approx(960.0)
