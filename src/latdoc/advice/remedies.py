"""Findings become remedies, ranked for the user's priorities. Each contributing kind's
builders (:mod:`.builders`: one module per kind in :mod:`.kinds`) name its remedies and
declare each one's effects on cost and quality; a negligible finding gets none.

The ranking reads the corners of the seed's triangle in the order of the user's
priorities (:class:`~latdoc.model.Priorities`: ``--priorities``, else the scenario's
preset); the first corner that tells two remedies apart decides:

- latency: the share of the kind the remedy addresses (what that kind adds to a typical
  request, the most any remedy of it can save), larger first; then a remedy whose gain
  this run measured or fitted before one whose gain it did not, the larger gain first;
- cost: lower before none before higher;
- quality: answers unchanged before answers that may change before answers that may
  get worse.

Remedies no corner read tells apart keep their kind's own order. docs/method.md
("Ranking remedies") states the rule with the seed's examples.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

from latdoc.advice.builders import builders_for
from latdoc.model import (
    Corner,
    CostChange,
    Diagnosis,
    Finding,
    Kind,
    Priorities,
    QualityRisk,
    Remedy,
    RunContext,
)

_COST = tuple(CostChange)
"""Cost classes, cheaper first."""
_QUALITY = tuple(QualityRisk)
"""Quality classes, safer first."""

Rank = tuple[float, ...]


def recommend(diagnosis: Diagnosis, context: RunContext) -> tuple[Remedy, ...]:
    """Remedies for every contributing finding, ranked for ``context.ranked_for``."""
    remedies: dict[str, tuple[Remedy, int]] = {}
    negligible = set(diagnosis.verdict.negligible)
    for finding in diagnosis.findings:
        if finding.kind in negligible:
            continue
        for remedy, place in _for_finding(finding, diagnosis, context):
            kept = remedies.get(remedy.key)
            if kept is None or (remedy.predicted_gain_ms or 0) > (kept[0].predicted_gain_ms or 0):
                remedies[remedy.key] = (remedy, place)
    priorities, shares = context.ranked_for, diagnosis.shares_ms
    ranked = sorted(remedies.values(), key=lambda kept: rank(kept[0], kept[1], priorities, shares))
    return tuple(remedy for remedy, _ in ranked)


def rank(r: Remedy, place: int, priorities: Priorities, shares: Mapping[Kind, float]) -> Rank:
    """``r``'s place in the ranking, smaller first: each corner of ``priorities`` in order,
    then ``place``, where ``r`` stands in its kind's own order. The share, not the gain,
    leads the latency corner, so a small measured saving never outranks the fix for the
    verdict's seconds."""
    if r.effects is None:
        raise ValueError(f"remedy {r.key!r} has no effects to rank it by")
    corners: dict[Corner, Rank] = {
        Corner.LATENCY: (
            -shares.get(r.addresses, 0.0),
            0 if r.predicted_gain_ms is not None else 1,
            -(r.predicted_gain_ms or 0.0),
        ),
        Corner.COST: (_COST.index(r.effects.cost),),
        Corner.QUALITY: (_QUALITY.index(r.effects.quality),),
    }
    return (*(value for corner in priorities.order for value in corners[corner]), place)


def with_remedies(diagnosis: Diagnosis, context: RunContext) -> Diagnosis:
    """``diagnosis`` with its remedies, ranked for the run's priorities, which it names."""
    return replace(diagnosis, remedies=recommend(diagnosis, context), priorities=context.ranked_for)


def _for_finding(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[tuple[Remedy, int]]:
    """Each remedy a kind's builders (:mod:`.builders`) name for ``f``, with the effects
    its builder declares and its place in the kind's own order. A remedy names the
    concrete change for httpx and the openai SDK, computed for this machine, the user's
    settings and this run's numbers (pool size ``2 × cores + concurrency``, the window to
    trim to, a read timeout between the stream's normal gaps and its stalls). A gain is
    printed only where this run measured it (keep-alive: cold minus warm first byte) or
    the length curve models it (trimming: the curve's prediction at the long prompt minus
    at the window), each with its 95% interval; every other remedy carries the ``latdoc
    verify`` command that would measure it on this endpoint, or says in words how one
    would."""
    for builder in builders_for(f.kind):
        for remedy in builder.build(f, d, ctx):
            yield replace(remedy, effects=builder.effects_of(remedy)), builder.place_of(remedy)
