"""``decode``: slow generation. The rule fires when the stream's steady time per output
token (its median inter-chunk gap over the tokens per chunk, so a stall does not pass
for slow generation) exceeds :data:`SLOW_TPOT_MS`. Its share is (answer tokens − 1) ×
that time per token; reasoning tokens are left to ``reasoning``.

A stream a hop passed on a buffer at a time has gaps of zero inside each burst: its
time per token is read over the bursts instead, the span from the first burst's
arrival to the last over the tokens after the first burst. A stream held whole tells
its time per token only where the server says how long it produced the tokens.
"""

from __future__ import annotations

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts, stream_tpot_ms
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.stats import median_of
from latdoc.model import Finding, Kind

__all__ = ["SLOW_TPOT_MS", "SPEC", "decode"]

SLOW_TPOT_MS = 50.0


def decode(f: Facts) -> Finding | None:
    ok = [t for t in f.measured if t.ok]
    tpot = median_of(stream_tpot_ms(t) for t in ok)
    tokens = median_of(float(t.answer_tokens) for t in ok if t.answer_tokens)
    if tpot is None or tokens is None or tpot <= SLOW_TPOT_MS:
        return None
    decode = tpot * max(0.0, tokens - 1)
    return Finding(
        Kind.DECODE,
        "Slow generation",
        f"{tpot:.0f} ms per output token > {SLOW_TPOT_MS:.0f} ms "
        f"({1000 / tpot:.1f} tokens/s) in the stream's steady rhythm",
        {"tpot_ms": tpot, "decode_ms": decode, "output_tokens": tokens},
        share_ms=decode,
        n=len(ok),
        confidence=confidence(len(ok), tpot / SLOW_TPOT_MS - 1),
    )


SPEC = KindSpec(
    Kind.DECODE,
    "Decode",
    "slow generation or long outputs",
    colour="#46a85c",
    rule=decode,
)
