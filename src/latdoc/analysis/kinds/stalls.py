"""``stalls``: pauses in the middle of a stream. The rule fires on inter-token gaps far
above the stream's own rhythm (:func:`~latdoc.analysis.signals.find_stalls`: modified
z > 3.5, at least 5× the median gap and 100 ms), outside streams a hop held back. Its
share is the pause time per request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.stats import quantile
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind
from latdoc.records import RequestTrace

__all__ = ["SPEC", "stalls"]


def stalls(f: Facts) -> Finding | None:
    if not f.stalls:
        return None
    ok = [t for t in f.measured if t.ok]
    affected = len({i for i, _ in f.stalls})
    total = sum(gap for _, gap in f.stalls)
    longest = max(gap for _, gap in f.stalls)
    evidence = {
        "stalls": float(len(f.stalls)),
        "longest_ms": longest,
        "shortest_ms": min(gap for _, gap in f.stalls),
        "requests": float(affected),
    }
    normal = _normal_gaps(ok, [gap for _, gap in f.stalls])
    if normal:
        evidence["normal_gap_p99_ms"] = quantile(normal, 0.99)
    slowest = max((t.ttft_ms for t in ok if t.ttft_ms is not None), default=None)
    if slowest is not None:
        evidence["slowest_ttft_ms"] = slowest
    return Finding(
        Kind.STALLS,
        N_("The stream stalls mid-way"),
        Message(
            "{n} inter-token gaps far above the stream's rhythm (modified z > 3.5, ≥ 5× the "
            "median gap and ≥ 100 ms) in {affected} of {total} requests",
            n=len(f.stalls),
            affected=affected,
            total=len(ok),
        ),
        evidence,
        share_ms=total / max(1, len(ok)),
        n=len(ok),
        confidence=confidence(len(ok), affected / max(1, len(ok))),
    )


def _normal_gaps(traces: Sequence[RequestTrace], stall_gaps: Sequence[float]) -> list[float]:
    """Every inter-token gap of the successful requests except the stalls."""
    left = Counter(stall_gaps)
    normal = []
    for gap in (g for t in traces for g in t.itl_ms):
        if left[gap] > 0:
            left[gap] -= 1
        else:
            normal.append(gap)
    return normal


SPEC = KindSpec(
    Kind.STALLS,
    N_("Mid-stream stalls"),
    N_("pauses in the middle of the stream"),
    colour="#d95892",
    rule=stalls,
    in_the_slot=True,
)
