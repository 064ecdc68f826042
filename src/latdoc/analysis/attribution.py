"""Attribution: which kind of slow, from labelled traces, by the seed's rules and a few more.

``diagnose(samples, context)`` is pure. It summarises each step (network, input
length, load), applies one rule per kind with the thresholds of MISSION.md (the
rules: :mod:`._network_rules`, :mod:`._serving_rules`, :mod:`._client_rules` and
the errors rule here), and picks the verdict: the kind whose finding adds the most
latency to a typical request, with the others as contributing kinds. A finding whose
share a user would not notice (:mod:`.noticeable`) is listed as negligible instead
and never chosen. Errors come first when a quarter or more of the requests failed:
nothing else matters until they succeed.
"""

from __future__ import annotations

from collections.abc import Sequence

from latdoc.analysis._client_rules import client
from latdoc.analysis._network_rules import network_path, network_setup
from latdoc.analysis._rule import Rule, confidence
from latdoc.analysis._serving_rules import decode, input_length, queueing, reasoning, stalls
from latdoc.analysis.facts import Facts, gather_facts
from latdoc.analysis.length_rule import LONG_REFERENCE_TOKENS, length_check
from latdoc.analysis.noticeable import is_noticeable, noticeable_bar, request_parts
from latdoc.analysis.server_rules import buffering
from latdoc.analysis.stats import median_of
from latdoc.analysis.traffic import StepViews
from latdoc.model import Diagnosis, Finding, Kind, NoticeableBar, RunContext, Scenario, Verdict
from latdoc.records import Sample

ERROR_RATE = 0.05
ERRORS_FIRST = 0.25


def _errors(f: Facts) -> Finding | None:
    total = len(f.measured)
    failed = sum(f.failed.values())
    if total == 0 or failed / total < ERROR_RATE:
        return None
    rate = failed / total
    typical = median_of(t.total_ms for t in f.measured if t.ok) or 0.0
    evidence: dict[str, float] = {"failed": float(failed), "requests": float(total)}
    evidence.update({code: float(count) for code, count in f.failed.most_common()})
    if f.retry_after_s is not None:
        evidence["retry_after_s"] = f.retry_after_s
    codes = ", ".join(f"{code} ×{count}" for code, count in f.failed.most_common())
    return Finding(
        Kind.ERRORS,
        "Requests fail",
        f"{failed} of {total} requests failed ({rate:.0%} ≥ {ERROR_RATE:.0%}): {codes}",
        evidence,
        share_ms=rate * max(typical, (f.retry_after_s or 0.0) * 1000),
        confidence=confidence(total, rate / ERROR_RATE - 1),
    )


RULES: tuple[Rule, ...] = (
    _errors,
    network_setup,
    network_path,
    input_length,
    queueing,
    stalls,
    buffering,
    decode,
    reasoning,
    client,
)
"""The rules, in the order they run. Each finding's ``share_ms`` is the latency that kind
adds to a typical request:

============== ============================================================
network_setup  DNS + TCP + TLS of a new connection (paid by every request
               when the server closes connections)
network_path   one round trip plus the time to upload the prompt
input_length   TTFT at a long prompt (~2K tokens; the longest for longdoc)
               minus TTFT at the shortest (the rule: :mod:`.length_rule`)
queueing       TTFT p95 − p50 at a fixed length, or the rise under concurrency
               (TTFT here counts from the request reaching the wire)
decode         (answer tokens − 1) × the steady time per token (reasoning
               tokens left to ``reasoning``)
reasoning      median time thinking before the first answer token: first
               reasoning output to first answer token, or, when the thinking is
               not streamed, reported reasoning tokens × the steady time per token
stalls         mid-stream pause time per request
buffering      how long a hop on the way held the stream's tokens back
client         the measuring client's event-loop lag, its own delay before a
               request left, or the wait for a free connection in its pool
errors         the failed fraction of a typical request's end-to-end time
============== ============================================================
"""


def diagnose(
    samples: Sequence[Sample], context: RunContext, views: StepViews | None = None
) -> Diagnosis:
    """The verdict, shares and findings for one run's samples. Remedies are added by advice.

    ``views`` relabel recorded traffic by step (:func:`~.traffic.traffic_views`).
    """
    reference = None if context.scenario is Scenario.LONGDOC else LONG_REFERENCE_TOKENS
    steps = samples if views is None else views.samples
    facts = gather_facts(
        samples, reference, steps, context.server_metrics, context.server_metrics_source
    )
    findings = tuple(f for rule in RULES if (f := rule(facts)) is not None)
    bar = noticeable_bar(samples if views is None else views.identical)
    verdict = _verdict(findings, facts, bar)
    shares = {f.kind: round(f.share_ms, 3) for f in findings}
    if not findings:
        typical = facts.network["total_ms"] or median_of(t.total_ms for t in facts.measured)
        shares = {Kind.HEALTHY: round(typical or 0.0, 3)}
    measured = facts.measured
    return Diagnosis(
        run_id=context.run_id,
        endpoint=context.endpoint,
        model=context.model,
        scenario=context.scenario,
        verdict=verdict,
        shares_ms=shares,
        findings=findings,
        remedies=(),
        network=facts.network,
        length=facts.curve,
        load=facts.load,
        notes=context.notes,
        requests=len(measured),
        failed=sum(1 for t in measured if not t.ok),
        length_check=length_check(facts),
        noticeable=bar,
        typical_request=request_parts(steps),
        server=facts.server,
        reasoning=facts.reasoning,
    )


def _verdict(all_findings: Sequence[Finding], facts: Facts, bar: NoticeableBar | None) -> Verdict:
    """The largest noticeable kind (errors first when a quarter failed), the other
    noticeable kinds as contributing, and the rest as negligible."""
    findings = [f for f in all_findings if is_noticeable(f, bar)]
    negligible = tuple(f.kind for f in all_findings if not is_noticeable(f, bar))
    if not findings:
        ok = sum(1 for t in facts.measured if t.ok)
        return Verdict(Kind.HEALTHY, (), confidence(ok, 0.5), negligible)
    total = len(facts.measured)
    failed = sum(facts.failed.values())
    errors = [f for f in findings if f.kind is Kind.ERRORS]
    if errors and total and failed / total >= ERRORS_FIRST:
        primary = errors[0]
    else:
        primary = max(findings, key=lambda f: f.share_ms)
    rest = sorted((f for f in findings if f is not primary), key=lambda f: -f.share_ms)
    return Verdict(primary.kind, tuple(f.kind for f in rest), primary.confidence, negligible)
