"""The verdict's confidence as a probability: how often verdicts with this run's evidence
were right.

A rule's confidence (:func:`latdoc.analysis._rule.confidence`) weighs the samples
behind its finding and its margin over the rule's threshold; alone it ranks verdicts
no better than a coin (on the truth bank's counterfactual truth, an AUROC of 0.54).
What tells a right verdict from a wrong one is how close *this* run came to another
answer. :func:`evidence_of` reads it from the findings and the noticeable bar:

- ``margin``: how far the primary kind's share is above the bar it had to clear (the
  log of their ratio; 0 for ``healthy``);
- ``runner_up``: how far the primary's share is above the next kind's that counts
  (log ratio; the margin when no other counts; 0 for ``healthy``);
- ``below``: for ``healthy``, how far the finding nearest its bar is below it (log
  ratio; the cap with no finding; 0 for a named kind);
- ``noise``: how much identical requests vary, against the typical request;
- ``requests``: the log of the requests behind the verdict;
- ``rule``: the primary rule's own confidence;
- ``findings``: how many kinds a rule fired for;
- ``nearest``: how near the deciding statistic of any rule that did not name the
  verdict came to its threshold, on either side (the smallest log ratio of a
  statistic to its threshold, :func:`rule_distances`): a lookup of 180 ms against
  200, 45 ms a token against 50;
- ``swing_cv``, ``swing_spread``: how much identical requests' TTFT varies (CV, and
  the log of p95 ÷ p50): busy periods the run may have met or missed;
- ``lengths``: the prompt lengths the length curve was read from;
- ``failed``: the share of requests that failed;
- ``negligible``: how many kinds were found too small to count;

and :func:`probability_right` turns them into the probability that the primary kind
is right with a logistic model fitted offline on the truth bank
(:mod:`latdoc.analysis.confidence_table`, written by ``bench/fit_confidence.py``), with
an offset per primary kind, and, for the nearness features, a weight per primary kind
as well (how near a threshold matters differs by kind: the AUROC of right against
wrong rose from 0.76 to 0.80 on a held-out draw). The verdict keeps the runner-up kind,
and says it is near a threshold when its margin is within :data:`NEAR_MARGIN` of the
bar or the runner-up is within it of the primary: a second run may say otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from latdoc.analysis import confidence_table as table
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds import decode, errors, input_length, network_setup, queueing
from latdoc.analysis.noticeable import bar_for
from latdoc.analysis.policy import HIGH_RTT_MS
from latdoc.analysis.stats import median_of
from latdoc.model import Finding, Kind, NoticeableBar, Verdict

__all__ = [
    "BY_KIND",
    "FEATURES",
    "NEAR_MARGIN",
    "Evidence",
    "calibrated",
    "evidence_of",
    "probability_right",
    "rule_distances",
]

FEATURES = (
    "nearest",
    "margin",
    "runner_up",
    "below",
    "noise",
    "requests",
    "rule",
    "findings",
    "swing_cv",
    "swing_spread",
    "lengths",
    "failed",
    "negligible",
)
"""The evidence's features, in the order the confidence table's weights are fitted in."""
BY_KIND = ("nearest", "margin", "runner_up", "below", "swing_cv", "swing_spread")
"""The features that get a weight of their own for each primary kind the fit saw often."""
NEAR_MARGIN = math.log(1.3)
"""A share within 30% of its bar, or of the next kind's share, is near a threshold."""
CAP = 3.0
"""Log ratios are read up to this (×20): beyond it the answer no longer wavers."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the confidence reads of one run, by the names of :data:`table.FEATURES`."""

    values: Mapping[str, float]
    runner_up: Kind | None
    """The kind a second run would most likely name instead."""
    near: bool
    """The verdict is within :data:`NEAR_MARGIN` of another answer."""


def _bar(f: Finding, bar: NoticeableBar | None) -> float:
    """The share ``f`` had to reach to count (1 ms where any share counts)."""
    needed = bar_for(f.kind, bar)
    return 1.0 if needed is None else needed


def _log_ratio(a: float, b: float) -> float:
    return max(-CAP, min(CAP, math.log(max(a, 1e-6) / max(b, 1e-6))))


def rule_distances(f: Facts, bar: NoticeableBar | None = None) -> dict[Kind, float]:
    """How far each rule's deciding statistic is from its threshold (|log ratio|), for
    the rules whose statistic this run measured. Where a kind is named by its excess over
    the reference profile (decode, input length), the threshold is the value at which
    that excess would reach the kind's noticeable bar in this run: an endpoint near the
    profile's slow edge, but with an excess far below the bar, is far from naming it."""
    n, ld = f.network, f.load
    out: dict[Kind, list[float]] = {}

    def add(kind: Kind, value: float | None, threshold: float) -> None:
        if value is not None and value > 0:
            out.setdefault(kind, []).append(abs(math.log(value / threshold)))

    needed_dns = f.reference.edge("dns_ms") + (bar_for(Kind.NETWORK_SETUP, bar) or 0.0)
    add(Kind.NETWORK_SETUP, n["dns_ms"], needed_dns)
    if n["tls_ms"] is not None and n["rtt_ms"] is not None:
        add(Kind.NETWORK_SETUP, n["tls_ms"] - 2 * n["rtt_ms"], network_setup.SLOW_TLS_EXTRA_MS)
    add(Kind.NETWORK_PATH, n["rtt_ms"], HIGH_RTT_MS)
    check = input_length.length_check(f)
    if check is not None and check.reference_growth_ms is not None:
        needed = check.reference_growth_ms + (bar_for(Kind.INPUT_LENGTH, bar) or 0.0)
        add(Kind.INPUT_LENGTH, check.growth_ms, needed)
    add(Kind.QUEUEING, ld["concurrent_over_sequential"], queueing.QUEUE_LOAD_RATIO)
    add(Kind.QUEUEING, ld["ttft_cv"], queueing.QUEUE_CV)
    add(Kind.QUEUEING, ld["ttft_p95_over_p50"], queueing.QUEUE_P95_P50)
    ok = [t for t in f.measured if t.ok]
    tokens = median_of(float(t.answer_tokens) for t in ok if t.answer_tokens)
    gaps = max(1.0, (tokens or 2.0) - 1)
    needed_tpot = f.reference.edge("tpot_ms") + (bar_for(Kind.DECODE, bar) or 0.0) / gaps
    add(Kind.DECODE, median_of(decode.token_tpot_ms(t) for t in ok), needed_tpot)
    if f.measured:
        rate = sum(f.failed.values()) / len(f.measured)
        add(Kind.ERRORS, rate if rate > 0 else None, errors.ERROR_RATE)
    return {kind: min(d) for kind, d in out.items()}


def evidence_of(
    verdict: Verdict,
    findings: Sequence[Finding],
    bar: NoticeableBar | None,
    requests: int,
    facts: Facts | None = None,
) -> Evidence:
    """How close this run came to another answer."""
    by_margin = sorted(findings, key=lambda f: -f.excess_ms / _bar(f, bar))
    primary = next((f for f in findings if f.kind is verdict.primary), None)
    below = 0.0
    if primary is None:
        top = by_margin[0] if by_margin else None
        below = CAP if top is None else _log_ratio(_bar(top, bar), top.excess_ms)
        runner, margin, gap = (None if top is None else top.kind), 0.0, 0.0
    else:
        margin = _log_ratio(primary.excess_ms, _bar(primary, bar))
        others = sorted((f for f in findings if f is not primary), key=lambda f: -f.excess_ms)
        if others and others[0].excess_ms >= _bar(others[0], bar):
            runner, gap = others[0].kind, _log_ratio(primary.excess_ms, others[0].excess_ms)
        else:
            runner, gap = Kind.HEALTHY, margin
    noise = 0.0
    if bar is not None and bar.typical_ms > 0:
        noise = min(1.0, max(bar.noise_ms, bar.ttft_noise_ms or 0.0) / bar.typical_ms)
    distances = {} if facts is None else rule_distances(facts, bar)
    elsewhere = {k: d for k, d in distances.items() if k is not verdict.primary}
    nearest = min([CAP, *elsewhere.values()])
    if primary is None and elsewhere and nearest < below:
        runner = min(elsewhere, key=lambda k: elsewhere[k])
    swing_cv = swing_spread = 0.0
    lengths = failed = 0.0
    if facts is not None:
        swing_cv = min(2.0, facts.load.get("ttft_cv") or 0.0)
        swing_spread = math.log(max(1.0, facts.load.get("ttft_p95_over_p50") or 1.0))
        lengths = float(len(facts.curve.points)) if facts.curve is not None else 0.0
        if facts.measured:
            failed = sum(facts.failed.values()) / len(facts.measured)
    values = {
        "swing_cv": swing_cv,
        "swing_spread": swing_spread,
        "lengths": lengths,
        "failed": failed,
        "negligible": float(len(verdict.negligible)),
        "nearest": nearest,
        "margin": margin,
        "runner_up": gap,
        "below": below,
        "noise": noise,
        "requests": math.log(max(1, requests)),
        "rule": verdict.confidence,
        "findings": float(len(findings)),
    }
    near = (below if primary is None else min(margin, gap)) < NEAR_MARGIN
    return Evidence(values, runner, near)


def probability_right(kind: Kind, evidence: Evidence | Mapping[str, float]) -> float:
    """The probability that a verdict of ``kind`` with this evidence is right, by the
    table's logistic model (a kind the fit saw too seldom takes no offset)."""
    values = evidence.values if isinstance(evidence, Evidence) else evidence
    z = table.INTERCEPT + table.KIND_OFFSET.get(str(kind), 0.0)
    z += sum(w * values[name] for name, w in zip(table.FEATURES, table.WEIGHTS, strict=True))
    own = table.KIND_WEIGHTS.get(str(kind), {})
    z += sum(w * values[name] for name, w in own.items())
    # A bank of thousands measures neither certainty nor its opposite.
    return min(0.999, max(0.001, round(1.0 / (1.0 + math.exp(-z)), 3)))


def calibrated(
    verdict: Verdict,
    findings: Sequence[Finding],
    bar: NoticeableBar | None,
    requests: int,
    facts: Facts | None = None,
) -> Verdict:
    """``verdict`` with its rule's confidence replaced by the probability it is right (the
    rule's kept as ``rule_confidence``), its runner-up and whether it is near a
    threshold, and the bank's accuracy for its kind."""
    evidence = evidence_of(verdict, findings, bar, requests, facts)
    bank = table.BANK_ACCURACY.get(str(verdict.primary))
    return replace(
        verdict,
        confidence=probability_right(verdict.primary, evidence),
        rule_confidence=verdict.confidence,
        confidence_model=table.VERSION,
        bank_accuracy=None if bank is None else bank[0],
        bank_n=None if bank is None else bank[1],
        runner_up=evidence.runner_up,
        near_threshold=evidence.near,
        evidence=dict(evidence.values),
    )
