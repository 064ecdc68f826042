"""Attribution: which kind of slow, from labelled traces, by the seed's rules and a few more.

``diagnose(samples, context)`` is pure. It summarises each step (network, input
length, load), applies each kind's rule (:mod:`.kinds`: one module per kind, with the
thresholds of MISSION.md) in the order :data:`~.kinds.KINDS` lists them, and picks the
verdict: the kind whose finding's excess is largest, what a typical request would save
were the kind at the reference profile's slow edge of healthy (:mod:`latdoc.reference`;
the whole share for a kind a healthy endpoint has none of), with the others as
contributing kinds. The typical request is the user's (:mod:`.typical`): of
their prompt (``RunContext.prompt_tokens``: told, or their recorded requests' median;
the seed's 2K-token long prompt where neither is known), read from the fitted length
curve. Each finding's ``share_ms`` is the latency its kind adds to that request, as the
kind's module defines it, and its ``excess_ms`` the part of it past healthy. A finding
whose excess a user would not notice (:mod:`.noticeable`) is listed as negligible
instead and never chosen. A kind's spec
may put it first whatever its share: errors, when a quarter or more of the requests
failed, since nothing else matters until they succeed. The verdict's confidence is the
probability that its primary kind is right, read from the primary rule's own confidence
by the truth bank's calibration (:mod:`.calibration`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from latdoc.analysis.calibration import calibrated
from latdoc.analysis.facts import Facts, gather_facts
from latdoc.analysis.kinds import specs
from latdoc.analysis.kinds.healthy import healthy_shares, healthy_verdict
from latdoc.analysis.kinds.input_length import LONG_REFERENCE_TOKENS, length_check
from latdoc.analysis.network_check import network_check
from latdoc.analysis.noticeable import is_noticeable, noticeable_bar, request_parts
from latdoc.analysis.traffic import StepViews
from latdoc.analysis.typical import growth_to, longer_prompt, typical_workload
from latdoc.i18n import Message
from latdoc.model import (
    Diagnosis,
    Finding,
    Kind,
    NoticeableBar,
    RunContext,
    Scenario,
    Verdict,
)
from latdoc.records import Sample, Step


def diagnose(
    samples: Sequence[Sample], context: RunContext, views: StepViews | None = None
) -> Diagnosis:
    """The verdict, shares and findings for one run's samples. Remedies are added by advice.

    ``views`` relabel recorded traffic by step (:func:`~.traffic.traffic_views`).
    """
    long_tokens = context.prompt_tokens or (
        None if context.scenario is Scenario.LONGDOC else LONG_REFERENCE_TOKENS
    )
    steps = samples if views is None else views.samples
    facts = gather_facts(
        samples,
        long_tokens,
        steps,
        context.server_metrics,
        context.server_metrics_source,
        reference=context.reference,
    )
    rules = [spec.rule for spec in specs() if spec.rule is not None]
    findings = with_the_requests_ahead(tuple(f for rule in rules if (f := rule(facts)) is not None))
    check = length_check(facts)
    identical = samples if views is None else views.identical
    beyond = sum(f.beyond_alone_ms for f in findings)
    bar = noticeable_bar(identical, growth_to(check) + beyond)
    verdict = calibrated(_verdict(findings, facts, bar), findings, bar, len(facts.measured), facts)
    workload = typical_workload(
        identical,
        check,
        bar,
        context.concurrency,
        context.prompt_tokens,
        context.prompt_source,
        beyond_alone_ms=beyond,
    )
    shares = {f.kind: round(f.share_ms, 3) for f in findings} or healthy_shares(
        facts, None if workload is None else workload.total_ms
    )
    parts = request_parts(steps)
    if parts is not None and growth_to(check) > 0:
        parts = replace(parts, prefill_ms=parts.prefill_ms + growth_to(check))
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
        length_check=check,
        network_check=network_check(facts, verdict),
        noticeable=bar,
        typical_request=parts,
        server=facts.server,
        reasoning=facts.reasoning,
        requests_by_step=_by_step(samples),
        workload=workload,
        longer_prompt=None
        if context.prompt_tokens is not None and context.prompt_source == "told"
        else longer_prompt(facts, check, bar, verdict, beyond_alone_ms=beyond),
        reference=None
        if context.reference is None
        else (context.reference.name, context.reference.origin),
    )


def with_the_requests_ahead(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """``findings``, where the user's requests queue for the server's slots, with the
    excess of each kind spent in the slot (:attr:`~.kinds.KindSpec.in_the_slot`) counted
    for the requests ahead too: a request waits ``k`` slot times (the queueing finding's
    ``slot_times_waited``), each as much shorter were the kind at the reference, so
    what it saves the user's request is its excess ``1 + k`` times. Its share, the time
    it adds to the request itself, stays."""
    queue = next((f for f in findings if f.kind is Kind.QUEUEING), None)
    ahead = 0.0 if queue is None else queue.evidence.get("slot_times_waited", 0.0)
    if ahead <= 0:
        return findings
    slot = {s.kind for s in specs() if s.in_the_slot}
    return tuple(
        replace(
            f,
            rule=Message(
                "{rule}; each of the {ahead:.2f} slot times a request waits is as much "
                "longer: it saves {ms:.0f} ms at the user's concurrency",
                rule=Message.of(f.rule),
                ahead=ahead,
                ms=f.excess_ms * (1 + ahead),
            ),
            excess_ms=f.excess_ms * (1 + ahead),
            evidence={**f.evidence, "excess_of_requests_ahead_ms": f.excess_ms * ahead},
        )
        if f.kind in slot and f.excess_ms > 0
        else f
        for f in findings
    )


def _by_step(samples: Sequence[Sample]) -> dict[str, int]:
    """Requests each step sent, in the order the steps ran (calibration only when one of
    its requests failed, as :attr:`Diagnosis.requests` counts it)."""
    counts = Counter(str(s.step) for s in samples if s.step != Step.CALIBRATION or not s.trace.ok)
    return dict(counts)


def _verdict(all_findings: Sequence[Finding], facts: Facts, bar: NoticeableBar | None) -> Verdict:
    """The largest noticeable kind (or the first whose spec says it comes first for this
    run: errors when a quarter failed), the other noticeable kinds as contributing, and
    the rest as negligible; healthy when none is noticeable."""
    findings = [f for f in all_findings if is_noticeable(f, bar)]
    negligible = tuple(f.kind for f in all_findings if not is_noticeable(f, bar))
    if not findings:
        return healthy_verdict(facts, negligible)
    ahead = [s.kind for s in specs() if s.first_when is not None and s.first_when(facts)]
    firsts = [f for kind in ahead for f in findings if f.kind == kind]
    primary = firsts[0] if firsts else max(findings, key=lambda f: f.excess_ms)
    rest = sorted((f for f in findings if f is not primary), key=lambda f: -f.excess_ms)
    return Verdict(primary.kind, tuple(f.kind for f in rest), primary.confidence, negligible)
