"""``decode``: slow generation. The rule fires when the stream's steady time per output
token (its median inter-chunk gap over the tokens per chunk, so a stall does not pass
for slow generation) lies past the reference profile's slow edge of healthy
(``tpot_ms``: 30.2 ms, the 10th percentile of hosted models' output speed). Its share
is (answer tokens − 1) × that time per token; its excess, what the typical request
would save at the edge, is (answer tokens − 1) × the time per token past it. Reasoning
tokens are left to ``reasoning``. Where the load step's streams, sent together at the
run's concurrency (the user's), decode slower than those sent alone and past the edge,
theirs is the time per token: a server that batches its streams slows each of them,
and the user's streams run together (at 29 ms a token alone and 90 ms eight at once,
the rule read the 29 and named nothing).

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

__all__ = ["SPEC", "decode", "streamed_tokens", "token_tpot_ms"]


def decode(f: Facts) -> Finding | None:
    ok = [t for t in f.measured if t.ok]
    tpot = median_of(token_tpot_ms(t) for t in ok)
    tokens = median_of(float(t.answer_tokens) for t in ok if t.answer_tokens)
    together = median_of(token_tpot_ms(t) for t in f.concurrent)
    healthy = f.reference["tpot_ms"]
    edge = healthy.slow_edge
    where = Message("in the stream's steady rhythm")
    n = len(ok)
    alone = tpot
    if together is not None and tpot is not None and together > tpot and together > edge:
        # The user's streams decode side by side: a server that batches them slows each.
        tpot, n = together, len(f.concurrent)
        where = Message("with {n} streams decoding at once (the run's --concurrency, yours)", n=n)
    if tpot is None or tokens is None or not healthy.is_slow(tpot):
        return None
    gaps = max(0.0, tokens - 1)
    return Finding(
        Kind.DECODE,
        N_("Slow generation"),
        Message(
            "{tpot:.0f} ms per output token ({rate:.1f} tokens/s) {where}, past the slow edge "
            "of healthy, {edge:.1f} ms (hosted endpoints decode at ~{typical:.0f} ms a token: "
            "{source})",
            tpot=tpot,
            rate=1000 / tpot,
            where=where,
            edge=edge,
            typical=healthy.typical,
            source=healthy.cited(),
        ),
        {"tpot_ms": tpot, "decode_ms": tpot * gaps, "output_tokens": tokens},
        share_ms=tpot * gaps,
        excess_ms=healthy.beyond_edge(tpot) * gaps,
        n=n,
        confidence=confidence(n, tpot / max(edge, 1e-9) - 1),
        # What decoding together adds over the requests sent alone, which the typical
        # request's time holds already.
        beyond_alone_ms=0.0 if alone is None else (tpot - alone) * gaps,
    )


SPEC = KindSpec(
    Kind.DECODE,
    N_("Decode"),
    N_("slow generation or long outputs"),
    colour="#46a85c",
    rule=decode,
    in_the_slot=True,
)
