"""``buffering``: a proxy, gateway or CDN holds the stream back and passes it on in bursts.

The rule fires when at least :data:`BUFFERED_SHARE` of the long streams arrived held
back (:mod:`latdoc.analysis.buffering` reads that from each stream's arrivals). Its
share is how long the hop held the first token back.
"""

from __future__ import annotations

from collections import Counter

from latdoc.analysis._rule import confidence
from latdoc.analysis.buffering import median_burst
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind

__all__ = ["BUFFERED_SHARE", "SPEC", "buffering"]

BUFFERED_SHARE = 0.5
"""The rule fires when at least this share of the long streams arrived held back."""


def buffering(f: Facts) -> Finding | None:
    """Streams that arrived in bursts although the server produced them over time."""
    bursts = f.bursts
    if not bursts or len(bursts) < BUFFERED_SHARE * f.long_streams:
        return None
    evidence = median_burst(bursts)
    evidence["streams_held"] = float(len(bursts))
    evidence["long_streams"] = float(f.long_streams)
    proxies = Counter(b.proxy for b in bursts if b.proxy is not None)
    named = f" ({proxies.most_common(1)[0][0]})" if proxies else ""
    numbers = {
        "events": evidence["events_per_stream"],
        "reads": evidence["reads_per_stream"],
        "span": evidence["arrival_span_ms"],
        "named": named,
    }
    if evidence["held_whole"] >= 0.5:
        produced = evidence.get("server_decode_ms")
        over = (
            Message("though the server says it produced them over {ms:.0f} ms", ms=produced)
            if produced is not None
            else Message(
                "and the first token came only with the rest (time to first token "
                "{share:.0%} of the whole request)",
                share=evidence["ttft_over_total"],
            )
        )
        pattern = Message(
            "{events:.0f} events in {reads:.0f} read(s), within {span:.1f} ms, {over}; "
            "something on the way buffers the response{named}",
            over=over,
            **numbers,
        )
    else:
        pattern = Message(
            "{events:.0f} events in {reads:.0f} reads over {span:.0f} ms, the first "
            "{first:.0f} together, so the first token waited ~{held:.0f} ms for the rest of "
            "its burst; something on the way passes the response on a buffer at a "
            "time{named}",
            first=evidence["first_burst_events"],
            held=evidence["held_ms"],
            **numbers,
        )
    return Finding(
        Kind.BUFFERING,
        N_("A proxy or gateway holds the stream back"),
        Message(
            "{n} of {streams} streams of 16+ events arrived in bursts: {pattern}",
            n=len(bursts),
            streams=f.long_streams,
            pattern=pattern,
        ),
        evidence,
        share_ms=evidence["held_ms"],
        n=len(bursts),
        confidence=confidence(len(bursts), len(bursts) / max(1, f.long_streams)),
    )


SPEC = KindSpec(
    Kind.BUFFERING,
    N_("Buffered stream"),
    N_("a proxy or gateway holds the stream back"),
    colour="#a0673a",
    rule=buffering,
    before_first_token=True,
)
