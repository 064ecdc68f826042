"""When one request settles a step's decision, and when the step asks again.

A measured value far from its rule's threshold decides the rule whatever the next
request of its kind reads: a request of the same kind differs from the last by the
endpoint's jitter, a few tens of percent at most. A value within
:data:`SETTLED_MARGIN` of a threshold (either side) could fall on the other side in
the next request, so the step asks again and the rule reads the median. The bank's
figures (``bench/calibration.py``) measure what the margin costs in accuracy and
saves in requests.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from latdoc.analysis.kinds.input_length import seed_rule_fires
from latdoc.analysis.kinds.network_setup import SLOW_DNS_MS, SLOW_TLS_EXTRA_MS
from latdoc.analysis.policy import HIGH_RTT_MS
from latdoc.i18n import N_
from latdoc.records import RequestTrace

SETTLED_MARGIN = 1.5
"""A value this many times below or above its threshold settles the rule from one request."""
SETUP_WORTH_MEASURING = 0.05
"""A new connection's setup of at least this share of a warm request is measured on more
new connections: half the share a kind must add to count
(:data:`~latdoc.analysis.policy.NOTICEABLE_FRACTION`), so that a setup near the bar, and
what keep-alive saves, is read from the five new connections an interval needs; the
extra requests also feed the rules that read every request sent alone."""


def _near(value: float | None, threshold: float) -> bool:
    return value is not None and threshold / SETTLED_MARGIN < value < threshold * SETTLED_MARGIN


def network_unsettled(cold: RequestTrace, warm: Sequence[RequestTrace]) -> str | None:
    """Why the first cold request and the warm ones do not settle the network rules, or
    None when they do (the extra cold requests are then not sent)."""
    if _near(cold.dns_ms, SLOW_DNS_MS):
        return N_("the DNS lookup is near its threshold")
    if _near(cold.handshake_ms, HIGH_RTT_MS):
        return N_("the round trip is near its threshold")
    tls, rtt = cold.tls_ms, cold.handshake_ms
    if tls is not None and rtt is not None and _near(tls - 2 * rtt, SLOW_TLS_EXTRA_MS):
        return N_("the TLS handshake is near its threshold")
    reused = [t for t in warm if t.ok and not t.new_connection] or [t for t in warm if t.ok]
    totals = [t.total_ms for t in reused if t.total_ms is not None]
    setup = cold.setup_ms
    if setup is not None and totals and setup >= SETUP_WORTH_MEASURING * statistics.median(totals):
        return N_("a new connection's setup is a noticeable share of a request")
    return None


def length_unsettled(short_ms: float, long_ms: float) -> bool:
    """Whether the length rule could decide otherwise for a reference TTFT
    :data:`SETTLED_MARGIN` times faster or slower than ``long_ms``."""
    decisions = {
        seed_rule_fires(short_ms, long_ms * m) for m in (1 / SETTLED_MARGIN, 1.0, SETTLED_MARGIN)
    }
    return len(decisions) > 1
