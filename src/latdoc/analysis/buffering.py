"""Streams that do not stream: a proxy, gateway or CDN that holds the event stream back.

A buffering hop between client and server passes the events on when its buffer is
full or the response is over, so they arrive in bursts, often all at once at the
end, and the time to first token is nearly the whole request whatever the model
does. :func:`stream_burst` reads that from one trace's chunk arrivals. The stream
must be long enough to tell (:data:`MIN_CHUNKS` content events or more: a server
may send a short answer in one piece itself), and few socket reads must carry its
many events (:data:`EVENTS_PER_READ` or more each, the first read too). Then:

- **held whole**: the events arrived within a small fraction (:data:`SPAN_FRACTION`)
  of the time the server says it took to produce them; where the server does not
  say, within that fraction of the client's own wait for the first token. The
  tokens were held for the production time, less the arrival span.
- **passed on a buffer at a time** (a hop whose buffer is smaller than the answer):
  the bursts came over the production time, each a buffer's worth of events. The
  first token waited while the rest of its buffer was produced: the first burst's
  events after it, times the time per token (the server's, where it says; else
  the arrivals' own pace, events after the first burst over the time they took).

Either way the tokens held back must come to :data:`MIN_HELD_MS` or more.

Response headers that name a hop on the way (``Server: nginx``, ``Via``, a CDN's
id, ``X-Accel-Buffering: yes``, a ``Content-Length`` on an event stream) are kept
as evidence beside the pattern; they never fire the rule alone.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from latdoc.analysis.servertime import server_timing_of
from latdoc.records import RequestTrace

__all__ = [
    "EVENTS_PER_READ",
    "MIN_CHUNKS",
    "MIN_EVENTS",
    "MIN_HELD_MS",
    "SPAN_FRACTION",
    "Burst",
    "judged",
    "median_burst",
    "proxy_named",
    "stream_burst",
]

MIN_CHUNKS = 16
"""Streams with fewer content events (or tokens, :func:`judged`) are not judged."""
MIN_EVENTS = 4
"""A stream of several tokens an event is judged from this many events: fewer may be
a server's own pieces of a short answer."""
EVENTS_PER_READ = 8.0
"""A healthy stream arrives about one event per read; a held one many per read."""
SPAN_FRACTION = 0.1
"""The events arrived within this fraction of the time it took to produce them."""
MIN_HELD_MS = 50.0
"""Tokens held back for less than this are not worth naming."""

_CDN_HEADERS = (
    "cf-ray",
    "x-amz-cf-id",
    "x-served-by",
    "akamai-grn",
    "x-azure-ref",
    "x-cdn",
    "x-cache",
)


@dataclass(frozen=True, slots=True)
class Burst:
    """One stream that arrived in bursts, with the numbers that show it."""

    chunks: int
    """Content events in the stream."""
    reads: int
    """Socket reads that carried them."""
    span_ms: float
    """From the first content event's arrival to the last one's."""
    first_burst: int
    """Content events the first read carried: the first token's buffer."""
    whole: bool
    """Held whole, the stream passed on at the end; else a buffer at a time."""
    produced_ms: float | None
    """How long the server says it took to produce the tokens after the first;
    ``None`` when it does not say."""
    held_ms: float
    """How long the first token was held back. Held whole: the server's production
    time minus the arrival span; where the server does not say, the client's wait from
    the end of sending to the first token less a one-token request's wait (its prefill;
    without one, an upper bound). A buffer at a time: the first burst's events after
    the first token, times the time per token."""
    ttft_over_total: float
    """Time to first token over the whole request: near 1 when the stream was held."""
    proxy: str | None
    """The response headers that name a hop on the way, as ``name: value`` text."""


def proxy_named(headers: Mapping[str, str]) -> str | None:
    """What the response headers say stands between client and server, or ``None``."""
    found = []
    server = headers.get("server")
    if server:
        found.append(f"Server: {server}")
    for name in ("via", "x-accel-buffering", "content-length", *_CDN_HEADERS):
        value = headers.get(name)
        if value:
            found.append(f"{name}: {value}")
    return "; ".join(found) or None


def stream_burst(trace: RequestTrace, one_token_ms: float | None = None) -> Burst | None:
    """``trace``'s stream as a :class:`Burst` when it arrived held back, else ``None``.

    ``one_token_ms`` is what a request asking for one token waited from the end of its
    sending to that token (the run's calibration requests): a stream held whole whose
    server does not say how long it produced it waited that long for its prefill, and
    the rest for the hop. Without it the whole wait is counted, an upper bound."""
    chunks = trace.chunks
    if not trace.ok or not judged(trace):
        return None
    if trace.first_token_ns is None or trace.done_ns is None or not trace.done_ns:
        return None
    reads = trace.reads
    first = sum(1 for c in chunks if c.t_ns == chunks[0].t_ns)
    if len(chunks) < MIN_CHUNKS:
        # Fewer events than tokens to tell by: only a stream that came in one read is
        # read, as held whole (below, by its span: a server that writes its events as
        # it makes them spreads them over the time it takes).
        if first < len(chunks):
            return None
    elif len(chunks) / reads < EVENTS_PER_READ or first < EVENTS_PER_READ:
        return None
    span = (chunks[-1].t_ns - chunks[0].t_ns) / 1e6
    timing = server_timing_of(trace)
    produced = timing.decode_ms if timing is not None else None
    if produced is not None:
        whole = span <= SPAN_FRACTION * produced
        per_token = produced / (len(chunks) - 1)
        held = produced - span if whole else (first - 1) * per_token
    else:
        waited = (trace.first_token_ns - (trace.sent_ns or 0)) / 1e6
        whole = span <= SPAN_FRACTION * waited
        later = len(chunks) - first
        prefill = min(one_token_ms or 0.0, waited)
        held = waited - prefill if whole else (first - 1) * span / later if later else 0.0
    if held < MIN_HELD_MS:
        return None
    return Burst(
        chunks=len(chunks),
        reads=reads,
        span_ms=span,
        first_burst=first,
        whole=whole,
        produced_ms=produced,
        held_ms=held,
        ttft_over_total=trace.first_token_ns / trace.done_ns,
        proxy=proxy_named(trace.proxy_headers),
    )


def judged(trace: RequestTrace) -> bool:
    """Whether ``trace``'s stream is long enough to tell held back from streamed:
    :data:`MIN_CHUNKS` content events, or that many tokens (the usage's count where the
    server told it) in :data:`MIN_EVENTS` events or more (a server that sends several
    tokens an event)."""
    chunks = trace.chunks
    if len(chunks) >= MIN_CHUNKS:
        return True
    tokens = max(sum(c.tokens for c in chunks), trace.output_tokens or 0)
    return len(chunks) >= MIN_EVENTS and tokens >= MIN_CHUNKS


def median_burst(bursts: list[Burst]) -> dict[str, float]:
    """The evidence numbers of a set of bursts: medians of each."""
    produced = [b.produced_ms for b in bursts if b.produced_ms is not None]
    out = {
        "events_per_stream": statistics.median(b.chunks for b in bursts),
        "reads_per_stream": statistics.median(b.reads for b in bursts),
        "arrival_span_ms": statistics.median(b.span_ms for b in bursts),
        "first_burst_events": statistics.median(b.first_burst for b in bursts),
        "held_whole": sum(b.whole for b in bursts) / len(bursts),
        "held_ms": statistics.median(b.held_ms for b in bursts),
        "ttft_over_total": statistics.median(b.ttft_over_total for b in bursts),
    }
    if produced:
        out["server_decode_ms"] = statistics.median(produced)
    return {k: float(v) for k, v in out.items()}
