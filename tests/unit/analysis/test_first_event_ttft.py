"""The load step reads TTFT to the first *token*: a server that writes several tokens an
event sends its first when the last of them is decoded, so an irregular 1 to 8 tokens
an event swings TTFT by seven token times without any queue (the queueing rule's swing
test named a healthy endpoint queueing on it)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from latdoc.analysis.facts import first_event_decode_ms, gather_facts
from latdoc.analysis.kinds.queueing import queueing
from latdoc.records import Chunk, RequestTrace, Sample, Step
from report_samples import make_trace

MS = 1_000_000
PREFILL_MS = 74.0
TPOT_MS = 29.0
CHARS_PER_TOKEN = 5
FIRST_EVENTS = (1, 8, 3, 6, 1, 7, 2, 8, 5, 1, 4, 8)
"""The first event's tokens of twelve identical requests: what an irregular server drew."""


def _stream(first: int, *, exact: bool, per_event: int = 4, output: int = 32) -> RequestTrace:
    """A request whose first event carries ``first`` tokens and the rest ``per_event``
    (the last what is left), each sent when its last token is decoded: the first token
    ``PREFILL_MS`` after the request left, one every ``TPOT_MS``. ``exact``: the chunks
    count their tokens; else one each, as the probe reads a chat stream, with the usage
    telling the stream's total."""
    sizes = [first]
    while sum(sizes) < output:
        sizes.append(min(per_event, output - sum(sizes)))
    base = make_trace(dns=None, connect=None, tls=None, wait=0.0, first_token=0.0, stream=None)
    assert base.sent_ns is not None
    first_token_ns = base.sent_ns + round(PREFILL_MS * MS)
    chunks, decoded = [], 0
    for size in sizes:
        decoded += size
        arrival = first_token_ns + round((decoded - 1) * TPOT_MS * MS)
        chunks.append(Chunk(arrival, size * CHARS_PER_TOKEN, size if exact else 1))
    return replace(
        base,
        first_byte_ns=base.sent_ns,
        first_token_ns=chunks[0].t_ns,
        done_ns=chunks[-1].t_ns + MS,
        chunks=tuple(chunks),
        chunk_tokens_exact=exact,
        output_tokens=output,
        output_tokens_exact=True,
    )


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("first", [1, 2, 5, 8])
def test_the_first_events_later_tokens_are_taken_off_at_the_streams_rate(
    first: int, exact: bool
) -> None:
    trace = _stream(first, exact=exact)
    assert first_event_decode_ms(trace) == pytest.approx((first - 1) * TPOT_MS, abs=0.01)


@pytest.mark.parametrize("exact", [True, False])
def test_a_stream_of_one_token_an_event_loses_nothing(exact: bool) -> None:
    trace = _stream(1, exact=exact, per_event=1)
    assert first_event_decode_ms(trace) == 0.0
    # A first token of many characters does not read as several where the usage counts
    # one a chunk.
    long_first = replace(trace, chunks=(replace(trace.chunks[0], chars=60), *trace.chunks[1:]))
    assert first_event_decode_ms(long_first) == 0.0


def test_a_stream_without_a_usage_or_exact_counts_loses_nothing() -> None:
    trace = replace(_stream(8, exact=False), output_tokens=None, output_tokens_exact=False)
    assert first_event_decode_ms(trace) == 0.0


def test_a_share_of_characters_a_little_over_counts_whole_tokens() -> None:
    # The lab's words: three events of 8 tokens, of 55, 46 and 47 characters, the
    # first's share 8.9 tokens.
    trace = _stream(8, exact=False, per_event=8, output=24)
    wordy = replace(
        trace,
        chunks=tuple(replace(c, chars=n) for c, n in zip(trace.chunks, (55, 46, 47), strict=True)),
    )
    assert 6 * TPOT_MS <= first_event_decode_ms(wordy) <= 7.5 * TPOT_MS


@pytest.mark.parametrize("exact", [True, False])
def test_irregular_tokens_an_event_are_no_swing_and_no_queue(exact: bool) -> None:
    samples = [
        Sample(Step.LOAD, _stream(first, exact=exact), target_prompt_tokens=2048, index=i)
        for i, first in enumerate(FIRST_EVENTS)
    ]
    as_first_events = [(t.ttft_ms or 0.0) for t in (s.trace for s in samples)]
    assert max(as_first_events) - min(as_first_events) == pytest.approx(7 * TPOT_MS, abs=0.1)
    load = gather_facts(samples, None).load
    assert load["ttft_p50_ms"] == pytest.approx(PREFILL_MS, abs=0.1)
    assert load["ttft_cv"] == pytest.approx(0.0, abs=1e-3)
    assert load["ttft_p95_over_p50"] == pytest.approx(1.0, abs=1e-3)
    assert queueing(gather_facts(samples, None)) is None
