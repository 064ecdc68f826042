"""Which findings matter: a share a user would notice, above the run's own noise.

A rule can fire on a real but tiny effect: a 1.4 ms connection setup paid by an
11 s request. Such a kind is named "negligible here" instead of contributing, and
gets no remedies. A finding contributes when its share of the typical request is

- at least :data:`NOTICEABLE_FRACTION` of that request's end-to-end time, and
- more than the run's noise in the same metric: the scaled median absolute
  deviation of identical requests (the network step's warm requests; the load
  step's sequential ones when there are fewer than three) — of their time to first
  token for the kinds whose specs say they act before it (setup, path, input length,
  queueing, the client, buffering), of their end-to-end time for the others. Scaled
  by 1.4826 it is the standard deviation for normal data, and unlike the standard
  deviation it is not inflated by the one slow request the other rules are there to explain. A share
  below it is smaller than what one identical request differs from the next. (A
  stream that stalls makes end-to-end times vary by seconds; that says nothing
  about how much the first token varies.) The end-to-end spread is read with each
  request's own stalls taken out: where half the streams stall, the stalls *are* the
  spread, and a cause must not be dismissed by the noise it makes.

A kind whose spec says a user notices it whatever its share (failed requests) is
never negligible.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from latdoc.analysis.kinds import spec_of
from latdoc.analysis.policy import NOTICEABLE_FRACTION
from latdoc.analysis.servertime import split_ttft
from latdoc.analysis.signals import find_stalls
from latdoc.analysis.stats import median_of
from latdoc.model import Finding, NoticeableBar, RequestParts
from latdoc.records import RequestTrace, Sample, Step

MAD_TO_SIGMA = 1.4826
"""Scales a median absolute deviation to the standard deviation of normal data."""
MIN_SAME_CONDITION = 3
"""Fewer identical requests than this say nothing about the spread."""


def noticeable_bar(samples: Sequence[Sample]) -> NoticeableBar | None:
    """The bar of this run, or None when no identical requests succeeded."""

    def warm(s: Sample) -> bool:
        return s.step == Step.NETWORK and not s.cold

    def sequential(s: Sample) -> bool:
        return s.step == Step.LOAD and s.concurrency == 1

    totals_warm = _values(samples, warm, lambda t: t.total_ms)
    totals_seq = _values(samples, sequential, lambda t: t.total_ms)
    typical = median_of(totals_warm) or median_of(totals_seq)
    if typical is None:
        return None
    use_warm = len(totals_warm) >= MIN_SAME_CONDITION
    same = warm if use_warm else sequential
    unstalled = _values(samples, same, _total_without_stalls)
    ttfts = _values(samples, same, lambda t: t.ttft_ms)
    return NoticeableBar(typical, _noise(unstalled) or 0.0, NOTICEABLE_FRACTION, _noise(ttfts))


def _total_without_stalls(trace: RequestTrace) -> float | None:
    """End-to-end time less the stalls the stalls rule finds in this stream."""
    total = trace.total_ms
    if total is None:
        return None
    return total - sum(stall.gap_ms for stall in find_stalls(trace.itl_ms))


def is_noticeable(finding: Finding, bar: NoticeableBar | None) -> bool:
    spec = spec_of(finding.kind)
    if spec.always_noticeable or bar is None:
        return True
    return finding.share_ms >= bar.fraction * bar.typical_ms and finding.share_ms > (
        bar.noise_for(spec.before_first_token)
    )


def _noise(values: Sequence[float]) -> float | None:
    """The scaled MAD of ``values``; None with too few of them to say."""
    if len(values) < MIN_SAME_CONDITION:
        return None
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
    return RequestParts(setup or 0.0, send or 0.0, prefill, decode, len(cold), thinking)


def _values(
    samples: Sequence[Sample],
    keep: Callable[[Sample], bool],
    read: Callable[[RequestTrace], float | None],
) -> list[float]:
    values = (read(s.trace) for s in samples if keep(s) and s.trace.ok)
    return [v for v in values if v is not None]
