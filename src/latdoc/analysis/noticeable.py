"""Which findings matter: a share a user would notice, above the run's own noise.

A rule can fire on a real but tiny effect: a 1.4 ms connection setup paid by an
11 s request. Such a kind is named "negligible here" instead of contributing, and
gets no remedies. A finding contributes when its excess (the part of its share past
the reference profile's healthy, :attr:`~latdoc.model.Finding.excess_ms`; its whole
share for a kind a healthy endpoint has none of) is

- at least :data:`NOTICEABLE_FRACTION` of the typical request's end-to-end time, and
- more than the run's noise in the same metric: the scaled median absolute
  deviation of identical requests — every request sent alone at the load step's
  prompt length (:func:`~.facts.alone_at_one_length`: the network step's, cold and
  warm, and the load step's sequential ones), of their time to first token from the
  request reaching the wire for the kinds whose specs say they act before it (setup,
  path, input length, queueing, the client, buffering), of their end-to-end time less
  the connection's setup for the others. Scaled by 1.4826 it is the standard
  deviation for normal data, and unlike the standard deviation it is not inflated by
  the few slow requests the other rules are there to explain — as long as they are
  a minority, which pooling the seven to nine requests of both steps keeps them (four warm
  requests, two of them meeting a busy server, made a bar of seconds that dismissed
  the busy server it measured). A share below it is smaller than what one identical
  request differs from the next. (A stream that stalls makes end-to-end times vary
  by seconds; that says nothing about how much the first token varies.) The
  end-to-end spread is read with each request's own stalls taken out: where half
  the streams stall, the stalls *are* the spread, and a cause must not be dismissed
  by the noise it makes. The typical request is the user's (:class:`~latdoc.model.Workload`):
  the median end-to-end time of those requests that were not sent cold, plus what the
  fitted length curve adds from their prompt to the user's, so that every kind's share
  and the bar speak of one request.

A kind whose spec says a user notices it whatever its share is never negligible.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from latdoc.analysis.facts import alone_at_one_length, server_ttft_ms
from latdoc.analysis.kinds import spec_of
from latdoc.analysis.policy import NOTICEABLE_FRACTION
from latdoc.analysis.servertime import split_ttft
from latdoc.analysis.signals import find_stalls
from latdoc.analysis.stats import median_of
from latdoc.model import Finding, Kind, NoticeableBar, RequestParts
from latdoc.records import RequestTrace, Sample, Step

MAD_TO_SIGMA = 1.4826
"""Scales a median absolute deviation to the standard deviation of normal data."""
MIN_SAME_CONDITION = 3
"""Fewer identical requests than this say nothing about the spread."""
MIN_FASTER_HALF = 6
"""From this many identical requests the spread is read on the faster half of them."""
HALF_MAD_TO_SIGMA = 2.5018
"""Scales the median absolute deviation of the faster half of normal data (about its own
median) to the standard deviation of the whole."""


def noticeable_bar(samples: Sequence[Sample], added_ms: float = 0.0) -> NoticeableBar | None:
    """The bar of this run, or None when no identical requests succeeded; ``added_ms`` is
    what the typical request adds to their median: input length's growth from their
    prompt to its, and what the kinds add beyond a request sent alone."""
    alone = alone_at_one_length(samples) or [
        s for s in samples if s.step == Step.NETWORK and s.trace.ok
    ]
    warm = [s.trace for s in alone if not s.cold]
    typical = median_of(t.total_ms for t in warm) or median_of(s.trace.total_ms for s in alone)
    if typical is None:
        return None
    traces = [s.trace for s in alone]
    ttfts = [v for t in traces if (v := server_ttft_ms(t)) is not None]
    totals = [v for t in traces if (v := _own_total(t)) is not None]
    return NoticeableBar(
        typical + max(0.0, added_ms),
        _noise(totals) or 0.0,
        NOTICEABLE_FRACTION,
        _noise(ttfts),
        new_connection_ms=(
            _setup_of_new(samples) if any(t.new_connection is False for t in warm) else 0.0
        ),
    )


def _setup_of_new(samples: Sequence[Sample]) -> float:
    """The median setup (DNS + TCP + TLS) of the successful requests that opened a
    connection: what one adds to a request that reuses one."""
    return (
        median_of(
            t.setup_ms
            for s in samples
            if (t := s.trace).ok and t.new_connection and t.setup_ms is not None
        )
        or 0.0
    )


def _own_total(trace: RequestTrace) -> float | None:
    """End-to-end time less the connection's setup and the stalls the stalls rule finds
    in this stream: what identical requests share on any connection."""
    total = trace.total_ms
    if total is None:
        return None
    stalls = sum(stall.gap_ms for stall in find_stalls(trace.itl_ms))
    return total - (trace.setup_ms or 0.0) - stalls


def is_noticeable(finding: Finding, bar: NoticeableBar | None) -> bool:
    return share_noticeable(finding.kind, finding.excess_ms, bar)


def share_noticeable(kind: Kind, share_ms: float, bar: NoticeableBar | None) -> bool:
    """Whether ``kind`` adding ``share_ms`` to the bar's typical request is noticeable."""
    parts = _bar_parts(kind, bar)
    if parts is None:
        return True
    fraction, noise = parts
    return share_ms >= fraction and share_ms > noise


def bar_for(kind: Kind, bar: NoticeableBar | None) -> float | None:
    """The share ``kind`` must add to be noticeable in this run: its part of the typical
    request or the noise its metric shows, whichever is larger; None when any share is
    (no bar, or a kind noticed whatever it adds)."""
    parts = _bar_parts(kind, bar)
    return None if parts is None else max(parts)


def _bar_parts(kind: Kind, bar: NoticeableBar | None) -> tuple[float, float] | None:
    """The bar's share of the typical request and the noise ``kind`` is held against."""
    spec = spec_of(kind)
    if spec.always_noticeable or bar is None:
        return None
    typical = bar.typical_ms + (bar.new_connection_ms if spec.on_new_connection else 0.0)
    return bar.fraction * typical, bar.noise_for(spec.before_first_token)


def _noise(values: Sequence[float]) -> float | None:
    """The scaled MAD of ``values``, of their faster half from :data:`MIN_FASTER_HALF`
    values on; None with too few of them to say."""
    if len(values) < MIN_SAME_CONDITION:
        return None
    if len(values) >= MIN_FASTER_HALF:
        faster = sorted(values)[: len(values) // 2]
        centre = statistics.median(faster)
        return HALF_MAD_TO_SIGMA * statistics.median(abs(v - centre) for v in faster)
    centre = statistics.median(values)
    return MAD_TO_SIGMA * statistics.median(abs(v - centre) for v in values)


def request_parts(samples: Sequence[Sample]) -> RequestParts | None:
    """A request on a new connection split into its phases: medians over the network
    step's successful cold requests, None when there were none."""
    cold = [s.trace for s in samples if s.step == Step.NETWORK and s.cold and s.trace.ok]
    setup = median_of(t.setup_ms for t in cold)
    send = median_of(t.send_ms for t in cold)
    prefill = median_of(
        t.ttft_ms
        - (t.queue_ms or 0.0)
        - (t.client_delay_ms or 0.0)
        - (t.setup_ms or 0.0)
        - (t.send_ms or 0.0)
        for t in cold
        if t.ttft_ms is not None
    )
    thinking = median_of(t.reasoning_ms or 0.0 for t in cold) or 0.0
    stream = median_of(t.stream_ms for t in cold)
    if prefill is None or stream is None:
        return None
    decode = max(0.0, stream - thinking)
    told = [sp.prefill_ms for t in cold if (sp := split_ttft(t)) is not None]
    if told and len(told) == len(cold):
        server_prefill = statistics.median(told)
        return RequestParts(
            setup or 0.0,
            send or 0.0,
            server_prefill,
            decode,
            len(cold),
            thinking,
            prefill - server_prefill,
        )
    queued = _kept_waiting(cold)
    if queued:
        queued = min(queued, prefill)
        return RequestParts(
            setup or 0.0, send or 0.0, prefill - queued, decode, len(cold), thinking, queued
        )
    return RequestParts(setup or 0.0, send or 0.0, prefill, decode, len(cold), thinking)


def _kept_waiting(cold: Sequence[RequestTrace]) -> float | None:
    """The median wait in the server's queue its ``: keep-alive`` comments told of the
    cold requests (0 for one without them); None when none carried one."""
    if not any(t.keepalive_comments for t in cold):
        return None
    return median_of(t.keepalive_wait_ms for t in cold)
