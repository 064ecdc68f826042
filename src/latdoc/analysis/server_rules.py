"""The rules that read the server's own account: queueing it tells, and buffered streams.

``with_server_queueing`` completes the queueing rule where the server tells its
prefill: the rise of the time to first token under concurrency is split into the
server's prefill and the wait its prefill does not explain, so a queue on one slot
is named queueing, not prefill; and a queue the server reports itself fires the
rule when the client's numbers alone did not. ``buffering`` names streams that a
hop on the way held back (:mod:`.buffering`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from latdoc.analysis._rule import confidence
from latdoc.analysis.buffering import median_burst
from latdoc.analysis.facts import Facts
from latdoc.model import Finding, Kind

__all__ = ["BUFFERED_SHARE", "SERVER_QUEUE_MIN_MS", "buffering", "with_server_queueing"]

SERVER_QUEUE_MIN_MS = 100.0
"""A queue the server reports (or a wait its prefill does not explain) counts from here."""
BUFFERED_SHARE = 0.5
"""The rule fires when at least this share of the long streams arrived held back."""


def with_server_queueing(found: Finding | None, f: Facts) -> Finding | None:
    """The queueing finding with the server's split of it, or one from the server's own
    queue when the client's numbers did not fire the rule."""
    account = f.server
    if account is None:
        return found
    n = account.numbers
    alone_wait, conc_wait = n.get("alone_wait_ms"), n.get("concurrent_wait_ms")
    conc_prefill = n.get("concurrent_prefill_ms")
    evidence = {
        f"server_{key}": value
        for key in (
            "alone_prefill_ms",
            "concurrent_prefill_ms",
            "alone_wait_ms",
            "concurrent_wait_ms",
        )
        if (value := n.get(key)) is not None
    }
    if found is not None:
        if not evidence:
            return found
        rule = found.rule
        if conc_wait is not None and conc_prefill is not None:
            rule += (
                f"; by the server's own timing ({account.source}) its prefill took "
                f"{conc_prefill:.0f} ms under concurrency and {conc_wait:.0f} ms more was "
                "waiting: queueing, not prefill"
            )
        return replace(found, rule=rule, evidence={**found.evidence, **evidence})
    told = n.get("queue_ms")
    rise = None if conc_wait is None or alone_wait is None else conc_wait - alone_wait
    requests = int(n.get("requests") or 0)
    if told is not None and told >= SERVER_QUEUE_MIN_MS:
        return Finding(
            Kind.QUEUEING,
            "The server reports requests waiting in its queue",
            f"the server's own queue time ({account.source}) is {told:.0f} ms at the median "
            f"(≥ {SERVER_QUEUE_MIN_MS:.0f} ms)",
            {"server_queue_ms": told, **evidence},
            share_ms=told,
            confidence=confidence(requests, told / SERVER_QUEUE_MIN_MS - 1),
        )
    if rise is not None and rise >= SERVER_QUEUE_MIN_MS:
        return Finding(
            Kind.QUEUEING,
            "Requests wait on the server beyond their prefill under load",
            f"with concurrent requests the wait the server's prefill does not explain "
            f"({account.source}) rose {rise:.0f} ms (≥ {SERVER_QUEUE_MIN_MS:.0f} ms) "
            "over a request sent alone: queueing, not prefill",
            evidence,
            share_ms=rise,
            confidence=confidence(requests, rise / SERVER_QUEUE_MIN_MS - 1),
        )
    return None


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
    if evidence["held_whole"] >= 0.5:
        produced = evidence.get("server_decode_ms")
        over = (
            f"though the server says it produced them over {produced:.0f} ms"
            if produced is not None
            else "and the first token came only with the rest (time to first token "
            f"{evidence['ttft_over_total']:.0%} of the whole request)"
        )
        pattern = (
            f"{evidence['events_per_stream']:.0f} events in {evidence['reads_per_stream']:.0f} "
            f"read(s), within {evidence['arrival_span_ms']:.1f} ms, {over}; something on the "
            f"way buffers the response{named}"
        )
    else:
        pattern = (
            f"{evidence['events_per_stream']:.0f} events in {evidence['reads_per_stream']:.0f} "
            f"reads over {evidence['arrival_span_ms']:.0f} ms, the first "
            f"{evidence['first_burst_events']:.0f} together, so the first token waited "
            f"~{evidence['held_ms']:.0f} ms for the rest of its burst; something on the way "
            f"passes the response on a buffer at a time{named}"
        )
    return Finding(
        Kind.BUFFERING,
        "A proxy or gateway holds the stream back",
        f"{len(bursts)} of {f.long_streams} streams of 16+ events arrived in bursts: {pattern}",
        evidence,
        share_ms=evidence["held_ms"],
        confidence=confidence(len(bursts), len(bursts) / max(1, f.long_streams)),
    )
