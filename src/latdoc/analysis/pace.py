"""A stream's time per output token, read from one trace.

Its steady rhythm (the median gap between chunks over the tokens a chunk carries), or
where a buffering hop held it back (:mod:`.buffering`), the span of its bursts; the
tokens each event carried, exact or as its share of the usage's streamed tokens; what
decoding the first event's later tokens took; and the time a request spent reasoning,
seen in the stream or hidden and timed as tokens at that pace. The step summaries
(:mod:`.facts`) and the kinds read a stream's pace here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from latdoc.analysis.buffering import stream_burst
from latdoc.records import RequestTrace

WHOLE_TOKEN_SLACK = 1e-6
"""How far an estimate may fall short of a whole number of tokens and still count it
(an exact share of 8 tokens may compute as 7.9999999)."""


def event_tokens(trace: RequestTrace) -> list[float] | None:
    """The tokens each of the stream's events carried: their own counts where they are
    exact; else each event's share of the stream's characters of the tokens the usage
    says were streamed (the probe counts an event whose tokens it was not told as one).
    ``None`` without chunks, or with neither exact counts nor a usage."""
    chunks = trace.chunks
    if not chunks:
        return None
    if trace.chunk_tokens_exact:
        return [float(c.tokens) for c in chunks]
    streamed = streamed_tokens(trace)
    if streamed is None:
        return None
    chars = sum(c.chars for c in chunks)
    if chars <= 0:
        return [streamed / len(chunks)] * len(chunks)
    return [streamed * c.chars / chars for c in chunks]


def first_event_decode_ms(trace: RequestTrace) -> float:
    """What decoding the first event's tokens after its first took: (tokens − 1) × the
    stream's time per token. The first event's tokens are the whole tokens in
    :func:`event_tokens`'s, never more than the stream's tokens beyond one an event (so
    a stream of one token an event, exact or not, loses nothing): a share of the
    characters is a token or so out where words run long or short (the lab's first
    eight words, 55 characters against the next eights' 46, read 8.9 tokens), and a
    token too few leaves one token's time in the TTFT where one too many would take a
    token's time of the server's own wait away; the time per token is the median
    over the later events of each one's gap over its tokens (a stall is one gap of
    many; an event of eight tokens is eight tokens' time), or where a hop held the
    stream back, :func:`token_tpot_ms`.
    0 for an event of one token or a stream that tells no time per token."""
    tokens = event_tokens(trace)
    if not tokens:
        return 0.0
    beyond_one = round(sum(tokens)) - len(tokens)
    # Whole tokens only: a share of the characters a little over a token's reads as less.
    first = min(1 + beyond_one, math.floor(tokens[0] + WHOLE_TOKEN_SLACK))
    if first <= 1:
        return 0.0
    tpot = _event_tpot_ms(trace, tokens)
    return 0.0 if tpot is None else (first - 1) * tpot


def _event_tpot_ms(trace: RequestTrace, tokens: Sequence[float]) -> float | None:
    """The stream's time per token with each event's ``tokens``; ``None`` from fewer
    than two gaps."""
    if stream_burst(trace) is None:
        per_token = [gap / k for gap, k in zip(trace.itl_ms, tokens[1:], strict=True) if k > 0]
        return statistics.median(per_token) if len(per_token) >= 2 else None
    return token_tpot_ms(trace)


def streamed_tokens(trace: RequestTrace) -> int | None:
    """The output tokens the stream's chunks carried, by the server's usage: its output
    tokens less reasoning it counted but did not stream. ``None`` without a usage."""
    if not trace.output_tokens_exact or trace.output_tokens is None:
        return None
    hidden = (trace.reasoning_tokens or 0) if trace.first_reasoning_ns is None else 0
    return max(0, trace.output_tokens - hidden)


def token_tpot_ms(trace: RequestTrace) -> float | None:
    """The stream's time per output token (:func:`stream_tpot_ms`) with the tokens each
    chunk carried as the usage tells them: when the chunks' own counts are not exact
    (one a chunk, where the server gave no count per chunk) and the usage counts more
    tokens than the chunks, each chunk holds its share of them."""
    tpot = stream_tpot_ms(trace)
    if tpot is None or trace.chunk_tokens_exact:
        return tpot
    counted = sum(c.tokens for c in trace.chunks)
    streamed = streamed_tokens(trace)
    if streamed is None or counted <= 0 or streamed <= counted:
        return tpot
    return tpot * counted / streamed


def thinking_ms(trace: RequestTrace) -> tuple[float, bool] | None:
    """Time a request spent reasoning before its answer, and whether it was seen.

    Seen: from its first reasoning output to its first answer token. Hidden (the
    server reports reasoning tokens but streams none): the reported reasoning tokens
    times the stream's time per token (:func:`stream_tpot_ms`), as they were decoded
    before the first visible token. ``None`` for a request that did not reason.
    """
    seen = trace.reasoning_ms
    if seen is not None:
        return seen, True
    tokens = trace.reasoning_tokens
    tpot = stream_tpot_ms(trace)
    if tokens and tpot is not None:
        return tokens * tpot, False
    return None


def steady_tpot_ms(trace: RequestTrace) -> float | None:
    """Time per output token in the stream's steady rhythm: the median inter-chunk gap
    over the tokens per chunk, so a stall does not pass for slow generation."""
    itl = trace.itl_ms
    tokens = sum(c.tokens for c in trace.chunks)
    if len(itl) < 2 or tokens <= 0:
        return None
    return statistics.median(itl) / (tokens / len(trace.chunks))


def stream_tpot_ms(trace: RequestTrace) -> float | None:
    """The stream's time per output token: its steady rhythm (:func:`steady_tpot_ms`), or
    where a hop passed it on a buffer at a time (whose gaps inside a burst are zero),
    the span from the first burst's arrival to the last over the tokens after the first
    burst; a stream held whole tells it only from the server's own production time."""
    burst = stream_burst(trace)
    if burst is None:
        return steady_tpot_ms(trace)
    tokens = sum(c.tokens for c in trace.chunks)
    per_chunk = tokens / len(trace.chunks) if trace.chunks else 0.0
    if burst.whole:
        if burst.produced_ms is None or tokens < 2:
            return None
        return burst.produced_ms / (tokens - 1)
    after = burst.chunks - burst.first_burst
    if after < 1 or per_chunk <= 0:
        return None
    return burst.span_ms / after / per_chunk
