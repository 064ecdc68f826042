"""``decode``: slow generation. The rule fires when the stream's steady time per output
token (its median inter-chunk gap over the tokens per chunk, so a stall does not pass
for slow generation) exceeds :data:`SLOW_TPOT_MS`. Its share is (answer tokens − 1) ×
that time per token; reasoning tokens are left to ``reasoning``. Where the load step's
streams, sent together at the run's concurrency (the user's), decode slower than those
sent alone and past the threshold, theirs is the time per token: a server that batches
its streams slows each of them, and the user's streams run together (at 29 ms a token
alone and 90 ms eight at once, the rule read the 29 and named nothing).

A server may write several tokens per event (a fixed count, or an irregular one). Where
the stream does not say how many each event carried (OpenAI's chat sends its usage
once, at the end), the tokens per chunk are the usage's streamed tokens over the
chunks (:func:`token_tpot_ms`), not one each: a gap between two 8-token events is
eight tokens' time, not one's.

A stream a hop passed on a buffer at a time has gaps of zero inside each burst: its
time per token is read over the bursts instead, the span from the first burst's
arrival to the last over the tokens after the first burst. A stream held whole tells
its time per token only where the server says how long it produced the tokens.
"""

from __future__ import annotations

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.pace import streamed_tokens, token_tpot_ms
from latdoc.analysis.stats import median_of
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind

__all__ = ["SLOW_TPOT_MS", "SPEC", "decode", "streamed_tokens", "token_tpot_ms"]

SLOW_TPOT_MS = 50.0


def decode(f: Facts) -> Finding | None:
    ok = [t for t in f.measured if t.ok]
    tpot = median_of(token_tpot_ms(t) for t in ok)
    tokens = median_of(float(t.answer_tokens) for t in ok if t.answer_tokens)
    together = median_of(token_tpot_ms(t) for t in f.concurrent)
    where = Message("in the stream's steady rhythm")
    n = len(ok)
    if together is not None and tpot is not None and together > tpot and together > SLOW_TPOT_MS:
        # The user's streams decode side by side: a server that batches them slows each.
        tpot, n = together, len(f.concurrent)
        where = Message("with {n} streams decoding at once (the run's --concurrency, yours)", n=n)
    if tpot is None or tokens is None or tpot <= SLOW_TPOT_MS:
        return None
    decode = tpot * max(0.0, tokens - 1)
    return Finding(
        Kind.DECODE,
        N_("Slow generation"),
        Message(
            "{tpot:.0f} ms per output token > {limit:.0f} ms ({rate:.1f} tokens/s) {where}",
            tpot=tpot,
            limit=SLOW_TPOT_MS,
            rate=1000 / tpot,
            where=where,
        ),
        {"tpot_ms": tpot, "decode_ms": decode, "output_tokens": tokens},
        share_ms=decode,
        n=n,
        confidence=confidence(n, tpot / SLOW_TPOT_MS - 1),
    )


SPEC = KindSpec(
    Kind.DECODE,
    N_("Decode"),
    N_("slow generation or long outputs"),
    colour="#46a85c",
    rule=decode,
)
