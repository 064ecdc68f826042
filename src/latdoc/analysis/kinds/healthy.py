"""``healthy``: no kind of slow stands out. It has no rule of its own: it is the verdict
when no other kind's finding is noticeable, and its share is then the whole typical
request (the network step's warm requests, median end-to-end time), which the reports
show phase by phase.
"""

from __future__ import annotations

from collections.abc import Sequence

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.stats import median_of
from latdoc.i18n import N_
from latdoc.model import Kind, Verdict

__all__ = ["SPEC", "healthy_shares", "healthy_verdict"]

SPEC = KindSpec(
    Kind.HEALTHY,
    N_("Healthy"),
    N_("no kind of slow stands out"),
    colour="#9aa1aa",
    rule=None,
    shows_request_parts=True,
)


def healthy_verdict(facts: Facts, negligible: Sequence[Kind]) -> Verdict:
    """The verdict when no finding is noticeable: as sure as the successful requests
    behind it allow, with the kinds found too small to notice."""
    ok = sum(1 for t in facts.measured if t.ok)
    return Verdict(SPEC.kind, (), confidence(ok, 0.5), tuple(negligible))


def healthy_shares(facts: Facts, typical_ms: float | None = None) -> dict[Kind, float]:
    """The shares when no rule fired at all: the whole typical request is healthy
    (``typical_ms``, the user's request; else the network step's warm one)."""
    typical = (
        typical_ms or facts.network["total_ms"] or median_of(t.total_ms for t in facts.measured)
    )
    return {SPEC.kind: round(typical or 0.0, 3)}
