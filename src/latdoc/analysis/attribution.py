"""Attribution: which kind of slow, from labelled traces, by the seed's rules and a few more.

``diagnose(samples, context)`` is pure. It summarises each step (network, input
length, load), applies one rule per kind with the thresholds of MISSION.md, and
picks the verdict: the kind whose finding adds the most latency to a typical
request, with the others as contributing kinds. A finding whose share a user would
not notice (:mod:`.noticeable`) is listed as negligible instead and never chosen.
Errors come first when a quarter or more of the requests failed: nothing else
matters until they succeed.

Each finding's ``share_ms`` is the latency that kind adds to a typical request:

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

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from latdoc.analysis.diagnosis import (
    Diagnosis,
    Finding,
    Kind,
    NoticeableBar,
    Scenario,
    Verdict,
)
from latdoc.analysis.facts import Facts, gather_facts, median_of, steady_tpot_ms
from latdoc.analysis.host import HostFacts
from latdoc.analysis.length_rule import (
    LONG_REFERENCE_TOKENS,
    input_length_finding,
    length_check,
    length_confidence_margin,
)
from latdoc.analysis.noticeable import is_noticeable, noticeable_bar, request_parts
from latdoc.analysis.reasoning_rule import REASONING_MIN_MS, reasoning_finding
from latdoc.analysis.server_rules import buffering, with_server_queueing
from latdoc.analysis.servertime import server_account
from latdoc.analysis.stats import quantile
from latdoc.analysis.traffic import StepViews
from latdoc.records import RequestTrace, Sample, StepNote

SLOW_DNS_MS = 200.0
HIGH_RTT_MS = 100.0
SLOW_TLS_EXTRA_MS = 200.0
SLOW_UPLOAD_MS = 200.0
QUEUE_CV = 0.5
QUEUE_P95_P50 = 2.0
QUEUE_LOAD_RATIO = 1.5
QUEUE_MIN_MS = 100.0
SLOW_TPOT_MS = 50.0
CLIENT_QUEUE_MS = 10.0
CLIENT_LOOP_LAG_MS = 20.0
CLIENT_DELAY_MS = 10.0
ERROR_RATE = 0.05
ERRORS_FIRST = 0.25


@dataclass(frozen=True)
class RunContext:
    """What the analysis needs besides traces; gathered by the caller (no I/O here)."""

    run_id: str
    endpoint: str
    model: str
    scenario: Scenario = Scenario.CHAT
    concurrency: int = 1
    """The concurrency the user expects in production (for pool sizing)."""
    cpu_count: int = 1
    tcp_settings: Mapping[str, int] = field(default_factory=dict)
    """``net.ipv4.*`` values of the client host, by sysctl name."""
    notes: tuple[StepNote, ...] = ()
    host: HostFacts | None = None
    """The client host's checklist facts, as the run recorded them."""
    server_metrics: Mapping[str, float | None] = field(default_factory=dict)
    """What the engine's own metrics counted during the run (after − before)."""
    server_metrics_source: str | None = None
    """Where those metrics were scraped, in words."""


def _confidence(n: int, margin: float) -> float:
    """More samples and a wider margin over the threshold give more confidence."""
    sample_factor = min(1.0, n / 5.0)
    margin_factor = min(1.0, 0.6 + 0.4 * max(0.0, margin))
    return round(max(0.1, sample_factor * margin_factor), 2)


Rule = Callable[[Facts], Finding | None]


def _network_setup(f: Facts) -> Finding | None:
    n = f.network
    dns, tls, rtt, setup = n["dns_ms"], n["tls_ms"], n["rtt_ms"], n["setup_ms"]
    closes = n["server_closes_connections"]
    cold_n = int(n["cold_n"] or 0)
    if setup is None:
        return None
    evidence = {k: v for k, v in n.items() if v is not None and k in _SETUP_KEYS}
    if dns is not None and dns > SLOW_DNS_MS:
        return Finding(
            Kind.NETWORK_SETUP,
            "Slow DNS lookup",
            f"DNS lookup {dns:.0f} ms > {SLOW_DNS_MS:.0f} ms (seed: fix the network)",
            evidence,
            share_ms=dns,
            confidence=_confidence(cold_n, dns / SLOW_DNS_MS - 1),
        )
    if closes is not None and closes >= 0.5:
        return Finding(
            Kind.NETWORK_SETUP,
            "Every request opens a new connection",
            f"{closes:.0%} of requests sent for reuse needed a new connection: the server "
            "(or a proxy) closes connections, so each pays DNS + TCP + TLS",
            {**evidence, "reused_fraction": 1 - closes},
            share_ms=setup,
            confidence=_confidence(int(n["warm_n"] or 0), closes),
        )
    if tls is not None and rtt is not None and tls - 2 * rtt > SLOW_TLS_EXTRA_MS:
        extra = tls - 2 * rtt
        return Finding(
            Kind.NETWORK_SETUP,
            "Slow TLS handshake",
            f"TLS {tls:.0f} ms is {extra:.0f} ms more than its two round trips "
            f"(> {SLOW_TLS_EXTRA_MS:.0f} ms): long certificate chain or a slow server",
            evidence,
            share_ms=extra,
            confidence=_confidence(cold_n, extra / SLOW_TLS_EXTRA_MS - 1),
        )
    return None


_SETUP_KEYS = frozenset({"dns_ms", "connect_ms", "tls_ms", "setup_ms", "rtt_ms"})


def _network_path(f: Facts) -> Finding | None:
    n = f.network
    rtt = n["rtt_ms"]
    upload = median_of(t.send_ms for t in f.measured if t.ok and (t.request_bytes or 0) > 20_000)
    cold_n = int(n["cold_n"] or 0)
    evidence = {k: v for k, v in n.items() if v is not None and k in {"rtt_ms", "connect_ms"}}
    if upload is not None:
        evidence["long_prompt_send_ms"] = upload
    if rtt is not None and rtt > HIGH_RTT_MS:
        return Finding(
            Kind.NETWORK_PATH,
            "High round-trip time to the endpoint",
            f"TCP connect (one round trip) {rtt:.0f} ms > {HIGH_RTT_MS:.0f} ms: far region "
            "or a slow path",
            evidence,
            share_ms=rtt + (upload or 0.0),
            confidence=_confidence(cold_n, rtt / HIGH_RTT_MS - 1),
        )
    if upload is not None and upload > SLOW_UPLOAD_MS:
        return Finding(
            Kind.NETWORK_PATH,
            "Slow upload of long prompts",
            f"sending a long prompt took {upload:.0f} ms > {SLOW_UPLOAD_MS:.0f} ms "
            "(until the server acknowledged it): the uplink's bandwidth",
            evidence,
            share_ms=upload + (rtt or 0.0),
            confidence=_confidence(3, upload / SLOW_UPLOAD_MS - 1),
        )
    return None


def _input_length(f: Facts) -> Finding | None:
    check = length_check(f)
    if check is None or f.curve is None:
        return None
    n = sum(p.n for p in f.curve.points)
    return input_length_finding(f, check, _confidence(n, length_confidence_margin(check)))


def _queueing(f: Facts) -> Finding | None:
    return with_server_queueing(_client_queueing(f), f)


def _client_queueing(f: Facts) -> Finding | None:
    ld = f.load
    cv, spread, p50 = ld["ttft_cv"], ld["ttft_p95_over_p50"], ld["ttft_p50_ms"]
    ratio, conc = ld["concurrent_over_sequential"], ld["concurrent_ttft_p50_ms"]
    n = int(ld["sequential_n"] or 0)
    evidence = {k: v for k, v in ld.items() if v is not None}
    if ratio is not None and conc is not None and p50 is not None:
        rise = conc - p50
        if ratio >= QUEUE_LOAD_RATIO and rise >= QUEUE_MIN_MS:
            return Finding(
                Kind.QUEUEING,
                "Requests queue on the server under load",
                f"TTFT with {ld['concurrency']:.0f} concurrent requests is {ratio:.1f}× the "
                f"sequential TTFT (≥ {QUEUE_LOAD_RATIO}×) at the same prompt length",
                evidence,
                share_ms=rise,
                confidence=_confidence(n, ratio / QUEUE_LOAD_RATIO - 1),
            )
    if cv is not None and spread is not None and p50 is not None:
        varying = (cv >= QUEUE_CV or spread >= QUEUE_P95_P50) and p50 * (spread - 1) >= QUEUE_MIN_MS
        if varying:
            return Finding(
                Kind.QUEUEING,
                "Time to first token swings between identical requests",
                f"TTFT of same-length requests varies: CV {cv:.2f} (≥ {QUEUE_CV}) or p95/p50 "
                f"{spread:.1f} (≥ {QUEUE_P95_P50}); not explained by length: server-side "
                "queueing or background load",
                evidence,
                share_ms=p50 * (spread - 1),
                confidence=_confidence(n, max(cv / QUEUE_CV, spread / QUEUE_P95_P50) - 1),
            )
    return None


def _decode(f: Facts) -> Finding | None:
    ok = [t for t in f.measured if t.ok]
    tpot = median_of(steady_tpot_ms(t) for t in ok)
    tokens = median_of(float(t.answer_tokens) for t in ok if t.answer_tokens)
    if tpot is None or tokens is None or tpot <= SLOW_TPOT_MS:
        return None
    decode = tpot * max(0.0, tokens - 1)
    return Finding(
        Kind.DECODE,
        "Slow generation",
        f"{tpot:.0f} ms per output token > {SLOW_TPOT_MS:.0f} ms "
        f"({1000 / tpot:.1f} tokens/s) in the stream's steady rhythm",
        {"tpot_ms": tpot, "decode_ms": decode, "output_tokens": tokens},
        share_ms=decode,
        confidence=_confidence(len(ok), tpot / SLOW_TPOT_MS - 1),
    )


def _reasoning(f: Facts) -> Finding | None:
    share = f.reasoning.get("reasoning_ms")
    n = int(f.reasoning.get("reasoning_n") or 0)
    if share is None:
        return None
    return reasoning_finding(f, _confidence(n, share / REASONING_MIN_MS - 1))


def _stalls(f: Facts) -> Finding | None:
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
        "The stream stalls mid-way",
        f"{len(f.stalls)} inter-token gaps far above the stream's rhythm (modified z > 3.5, "
        f"≥ 5× the median gap and ≥ 100 ms) in {affected} of {len(ok)} requests",
        evidence,
        share_ms=total / max(1, len(ok)),
        confidence=_confidence(len(ok), affected / max(1, len(ok))),
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


def _client(f: Facts) -> Finding | None:
    lag = f.loop_lag_ms
    if lag is not None and lag > CLIENT_LOOP_LAG_MS:
        return Finding(
            Kind.CLIENT,
            "The measuring client's event loop runs late",
            f"median worst event-loop lag per request {lag:.0f} ms > {CLIENT_LOOP_LAG_MS:.0f} ms: "
            "the client machine is overloaded, and every timestamp is late by as much",
            {"loop_lag_ms": lag},
            share_ms=lag,
            confidence=_confidence(len(f.measured), lag / CLIENT_LOOP_LAG_MS - 1),
        )
    delay = f.client_delay_ms
    if delay is not None and delay > CLIENT_DELAY_MS:
        return Finding(
            Kind.CLIENT,
            "The measuring client holds requests back before they leave",
            f"median client delay before the request reached the wire {delay:.0f} ms > "
            f"{CLIENT_DELAY_MS:.0f} ms: its event loop was busy; the server's TTFT is "
            "counted from the wire without it",
            {"client_delay_ms": delay},
            share_ms=delay,
            confidence=_confidence(len(f.measured), delay / CLIENT_DELAY_MS - 1),
        )
    queue = f.load["client_queue_ms"]
    if queue is None or queue <= CLIENT_QUEUE_MS:
        return None
    return Finding(
        Kind.CLIENT,
        "Requests wait for a free connection in the client",
        f"median wait for a pooled connection {queue:.0f} ms > {CLIENT_QUEUE_MS:.0f} ms",
        {"pool_wait_ms": queue},
        share_ms=queue,
        confidence=_confidence(int(f.load["sequential_n"] or 0), queue / CLIENT_QUEUE_MS - 1),
    )


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
        confidence=_confidence(total, rate / ERROR_RATE - 1),
    )


RULES: tuple[Rule, ...] = (
    _errors,
    _network_setup,
    _network_path,
    _input_length,
    _queueing,
    _stalls,
    buffering,
    _decode,
    _reasoning,
    _client,
)


def diagnose(
    samples: Sequence[Sample], context: RunContext, views: StepViews | None = None
) -> Diagnosis:
    """The verdict, shares and findings for one run's samples. Remedies are added by advice.

    ``views`` relabel recorded traffic by step (:func:`~.traffic.traffic_views`).
    """
    reference = None if context.scenario is Scenario.LONGDOC else LONG_REFERENCE_TOKENS
    steps = samples if views is None else views.samples
    facts = gather_facts(samples, reference, steps)
    if context.server_metrics:
        facts.server = server_account(
            samples, context.server_metrics, context.server_metrics_source
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
        return Verdict(Kind.HEALTHY, (), _confidence(ok, 0.5), negligible)
    total = len(facts.measured)
    failed = sum(facts.failed.values())
    errors = [f for f in findings if f.kind is Kind.ERRORS]
    if errors and total and failed / total >= ERRORS_FIRST:
        primary = errors[0]
    else:
        primary = max(findings, key=lambda f: f.share_ms)
    rest = sorted((f for f in findings if f is not primary), key=lambda f: -f.share_ms)
    return Verdict(primary.kind, tuple(f.kind for f in rest), primary.confidence, negligible)
