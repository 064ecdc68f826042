"""The serving rules: the time the server spends on a request once it has it. The wait
in its queue (``queueing``), prefill that grows with the prompt (``input_length``),
thinking before the answer (``reasoning``), the steady rhythm of decode (``decode``)
and pauses mid-stream (``stalls``), each with its threshold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts, steady_tpot_ms
from latdoc.analysis.length_rule import (
    input_length_finding,
    length_check,
    length_confidence_margin,
)
from latdoc.analysis.reasoning_rule import reasoning_finding as reasoning
from latdoc.analysis.server_rules import with_server_queueing
from latdoc.analysis.stats import median_of, quantile
from latdoc.model import Finding, Kind
from latdoc.records import RequestTrace

__all__ = [
    "QUEUE_CV",
    "QUEUE_LOAD_RATIO",
    "QUEUE_MIN_MS",
    "QUEUE_P95_P50",
    "SLOW_TPOT_MS",
    "decode",
    "input_length",
    "queueing",
    "reasoning",
    "stalls",
]

QUEUE_CV = 0.5
QUEUE_P95_P50 = 2.0
QUEUE_LOAD_RATIO = 1.5
QUEUE_MIN_MS = 100.0
SLOW_TPOT_MS = 50.0


def input_length(f: Facts) -> Finding | None:
    check = length_check(f)
    if check is None or f.curve is None:
        return None
    n = sum(p.n for p in f.curve.points)
    return input_length_finding(f, check, confidence(n, length_confidence_margin(check)))


def queueing(f: Facts) -> Finding | None:
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
                confidence=confidence(n, ratio / QUEUE_LOAD_RATIO - 1),
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
                confidence=confidence(n, max(cv / QUEUE_CV, spread / QUEUE_P95_P50) - 1),
            )
    return None


def decode(f: Facts) -> Finding | None:
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
        confidence=confidence(len(ok), tpot / SLOW_TPOT_MS - 1),
    )


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
        "The stream stalls mid-way",
        f"{len(f.stalls)} inter-token gaps far above the stream's rhythm (modified z > 3.5, "
        f"≥ 5× the median gap and ≥ 100 ms) in {affected} of {len(ok)} requests",
        evidence,
        share_ms=total / max(1, len(ok)),
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
