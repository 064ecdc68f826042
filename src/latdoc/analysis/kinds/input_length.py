"""``input_length``, step 2 of the seed's method: does input length make it slow?

The rule compares TTFT at a long prompt (the seed's ~5,000 characters,
:data:`LONG_REFERENCE_TOKENS`; the longest measured for longdoc; the user's own prompt
when the run was told it) with TTFT at the shortest, both read from the fitted length
curve (:mod:`latdoc.analysis.length`), so every request on the curve counts: the seven
to nine sent alone at the shortest length, one or two at each other. The kind is named
when that growth lies past what a healthy endpoint's prefill adds between the two
lengths (the reference profile's slow edge, ``prefill_ms_per_1k``), and TTFT rises with
the length beyond the requests' jitter (:func:`trend_p`, a one-sided test over every
length measured at the policy's α): the growth follows the length, not the jitter of a
few requests. Its share is the fitted growth, its excess the growth past healthy. The
seed's own comparison, ≥ :data:`LENGTH_RATIO`× or ≥ :data:`LENGTH_MIN_RATIO`× with at
least :data:`LENGTH_MIN_GROWTH_MS` more (:func:`seed_rule_fires`), is kept as a
:class:`LengthCheck`, fired or not, so the report states it as the seed rule's line.

The test reads every request at every length, not the two lengths the thresholds
compare. The t test of the two lengths' log medians it replaces pooled the jitter from
the lengths asked twice, where a busy server's seconds land among a handful of short
requests: on an endpoint whose prefill grows 129× to 32K tokens with 30% of the
requests meeting a busy server, it named input length in about half of the runs
(p 0.07 in one of them), and on a flat curve with such busy periods it said "beyond
the jitter" 14–20% of the time. This one names that growth in 97% of simulated runs
that reach 32K tokens (67% of those cut at 8K, 33% at 2K) and in 9 of 10 runs against
the lab over loopback, and fires on a flat curve 3.6–5.5% of the time, the same with
or without busy periods (``bench/length_trend.py``, ``bench/false_positives.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.policy import ALPHA
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind, LengthCheck, LengthCurve, LengthPoint

__all__ = [
    "LENGTH_MIN_GROWTH_MS",
    "LENGTH_MIN_RATIO",
    "LENGTH_RATIO",
    "LONG_REFERENCE_TOKENS",
    "MONOTONIC_TOLERANCE",
    "SPEC",
    "TREND_EXACT_MAX",
    "TREND_PERMUTATIONS",
    "check_at",
    "input_length",
    "length_check",
    "long_tokens",
    "seed_rule_fires",
    "trend_p",
]

LENGTH_RATIO = 5.0
LENGTH_MIN_RATIO = 2.0
LENGTH_MIN_GROWTH_MS = 1000.0
MONOTONIC_TOLERANCE = 0.9
LONG_REFERENCE_TOKENS = 2048
"""The seed's long prompt (~5,000 characters); longdoc compares the longest measured."""
TREND_PERMUTATIONS = 1999
"""Shuffles of the TTFT ranks behind :func:`trend_p`: the smallest p it gives is 1/2000."""
TREND_EXACT_MAX = 400
"""From this many requests on (recorded traffic), :func:`trend_p` reads the shuffles'
distribution from its normal approximation instead of drawing them."""


def seed_rule_fires(short_ms: float, long_ms: float) -> bool:
    """The seed's comparison of TTFT at the long prompt with TTFT at the short one:
    ≥ :data:`LENGTH_RATIO`×, or ≥ :data:`LENGTH_MIN_RATIO`× and
    +:data:`LENGTH_MIN_GROWTH_MS`."""
    ratio = long_ms / max(short_ms, 1e-9)
    growth = long_ms - short_ms
    return ratio >= LENGTH_RATIO or (ratio >= LENGTH_MIN_RATIO and growth >= LENGTH_MIN_GROWTH_MS)


SAME_LENGTH = 0.02
"""A measured length within this share of the prompt the rule reads is that prompt (the
endpoint's count of a calibrated prompt differs by a token or two)."""


def long_tokens(curve: LengthCurve, reference: int | None) -> tuple[int, int | None]:
    """The prompt the rule reads the curve at, and the reference asked for when it lies
    beyond the longest length measured (None otherwise). The longest measured without a
    reference; a measured length within :data:`SAME_LENGTH` of it as counted; else the
    reference itself, read from the fitted curve between two measured lengths, and the
    longest measured length for one beyond it: the curve is not extrapolated."""
    longest = curve.points[-1].prompt_tokens
    if reference is None:
        return longest, None
    if reference > longest * (1 + SAME_LENGTH):
        return longest, reference
    near = min(curve.points, key=lambda p: (abs(p.prompt_tokens - reference), -p.prompt_tokens))
    if abs(near.prompt_tokens - reference) <= SAME_LENGTH * reference:
        return near.prompt_tokens, None
    return reference, None


def _grows_with_length(curve: LengthCurve) -> bool:
    """No longer prompt was served clearly faster than a shorter one (the measured
    medians): read only where the curve's requests are not known one by one."""
    best = [p.best_ms for p in curve.points]
    return all(later >= MONOTONIC_TOLERANCE * max(best[:i]) for i, later in enumerate(best) if i)


def trend_p(points: Sequence[LengthPoint]) -> float | None:
    """One-sided p of TTFT not rising with the prompt's length, over every request at every
    length: a permutation test of the requests' TTFT ranks against the log of their
    prompt length (Σ (log n − mean) · rank); None with fewer than two lengths or a length
    known only by its summary.

    Under a flat curve every request is alike but for the moment it was sent, so the
    ranks are exchangeable and the shuffles' p is exact, whatever the jitter's shape: a
    busy server that adds seconds to some requests moves their ranks, never the test's
    level. Ranks let a busy request count as one slow request, not as seconds of spread,
    and the log length's scores weigh the pairs far apart most, where a growth beats
    any busy period. Chosen by simulation (``bench/length_trend.py``) against a one-sided
    Kendall/Jonckheere count of every pair, the same count on each length's faster half,
    and a Kendall test of each length's fastest request: the last fires on a flat curve
    10–14% of the time (the fastest of eight short requests beats one request of
    another length by chance), the faster half loses at three lengths the power the
    halving costs, and the pair count names the growth a little less often."""
    lengths = [p for p in points if p.values_ms]
    if len(lengths) < len(points) or len({p.prompt_tokens for p in lengths}) < 2:
        return None
    from scipy.stats import norm, rankdata  # imported on use, as the analysis's statistics do

    scores = np.concatenate(
        [np.full(len(p.values_ms), math.log(max(p.prompt_tokens, 1))) for p in lengths]
    )
    ranks = rankdata(np.concatenate([np.asarray(p.values_ms, dtype=float) for p in lengths]))
    centred = scores - scores.mean()
    observed = float(centred @ ranks)
    tolerance = 1e-9 * (1.0 + abs(observed))
    if len(ranks) <= TREND_EXACT_MAX:
        rng = np.random.default_rng(0)
        shuffled = rng.permuted(np.tile(ranks, (TREND_PERMUTATIONS, 1)), axis=1)
        at_least = int(np.count_nonzero(shuffled @ centred >= observed - tolerance))
        return (1 + at_least) / (1 + TREND_PERMUTATIONS)
    spread = float(centred @ centred) * float(np.sum((ranks - ranks.mean()) ** 2))
    return float(norm.sf(observed / math.sqrt(spread / (len(ranks) - 1))))


def _requests(curve: LengthCurve) -> Message:
    """``13 requests at 5 lengths``."""
    n = sum(len(p.values_ms) for p in curve.points)
    return Message("{n} requests at {lengths} lengths", n=n, lengths=len(curve.points))


def _thresholds() -> Message:
    return Message(
        "≥ {ratio:.0f}×, or ≥ {min_ratio:.0f}× and +{growth:.0f} s",
        ratio=LENGTH_RATIO,
        min_ratio=LENGTH_MIN_RATIO,
        growth=LENGTH_MIN_GROWTH_MS / 1000,
    )


def length_check(f: Facts) -> LengthCheck | None:
    """The rule's comparison; None when fewer than two lengths were measured.

    It reads the fitted curve at the shortest length and at the long one, so every
    request on the curve counts, not the one or two at each end; and the growth counts
    as following the length only when TTFT rises with the length beyond the requests'
    jitter over every length (:func:`trend_p`; where the requests are known only by
    each length's summary, when no longer prompt was served clearly faster)."""
    return check_at(f, f.long_reference_tokens)


def check_at(f: Facts, reference: int | None) -> LengthCheck | None:
    """The rule's comparison with its long prompt at ``reference`` tokens (None: the
    longest measured), as :func:`length_check` makes it; None when the curve has fewer
    than two lengths or that prompt is no longer than the shortest measured."""
    curve = f.curve
    if curve is None:
        return None
    short = curve.points[0]
    tokens, asked = long_tokens(curve, reference)
    if tokens <= short.prompt_tokens:
        return None
    short_ms = curve.predict_ms(short.prompt_tokens)
    long_ms = curve.predict_ms(tokens)
    ratio = long_ms / max(short_ms, 1e-9)
    growth = long_ms - short_ms
    p50, spread = f.load["ttft_p50_ms"], f.load["ttft_p95_over_p50"]
    noise = p50 * (spread - 1) if p50 is not None and spread is not None else 0.0
    interval = curve.difference_interval_ms(tokens, short.prompt_tokens)
    p = trend_p(curve.points)
    grows = p < ALPHA if p is not None else _grows_with_length(curve)
    reasons = _shortfalls(
        curve, ratio, growth, p, seed_fires=seed_rule_fires(short_ms, long_ms), grows=grows
    )
    fired = not reasons
    why = _why(curve, ratio, p, reasons, asked, tokens)
    per_token = f.reference.edge("prefill_ms_per_1k") / 1000
    return LengthCheck(
        short_tokens=short.prompt_tokens,
        short_ms=short_ms,
        long_tokens=tokens,
        long_ms=long_ms,
        ratio=ratio,
        growth_ms=growth,
        noise_ms=noise,
        grows_with_length=grows,
        fired=fired,
        why=why,
        growth_interval_ms=interval,
        asked_tokens=asked,
        reference_growth_ms=per_token * (tokens - short.prompt_tokens),
    )


def _shortfalls(
    curve: LengthCurve,
    ratio: float,
    growth: float,
    p: float | None,
    *,
    seed_fires: bool,
    grows: bool,
) -> list[Message]:
    """Why the rule does not fire, one sentence per condition it misses: the seed's
    thresholds, and a rise beyond the requests' jitter; empty when it fires."""
    reasons: list[Message] = []
    if not seed_fires:
        reasons.append(
            Message(
                "{ratio:.1f}× and +{growth:.0f} ms fall short of {thresholds}",
                ratio=ratio,
                growth=growth,
                thresholds=_thresholds(),
            )
        )
    if not grows:
        reasons.append(
            Message(
                "TTFT does not rise with the length beyond the requests' jitter "
                "(one-sided trend p {p:.2g} ≥ {alpha}, over {requests})",
                p=p,
                alpha=ALPHA,
                requests=_requests(curve),
            )
            if p is not None
            else Message("a longer prompt was served clearly faster than a shorter one")
        )
    return reasons


def _why(
    curve: LengthCurve,
    ratio: float,
    p: float | None,
    reasons: list[Message],
    asked: int | None,
    tokens: int,
) -> Message:
    """The check's sentence: what fired it, or the ``reasons`` it did not; and, when the
    prompt ``asked`` for is beyond the curve, that it was read at ``tokens`` instead."""
    beyond = (
        Message(
            ", rising with the length beyond the requests' jitter (one-sided trend p {p:.2g}, "
            "over {requests})",
            p=p,
            requests=_requests(curve),
        )
        if p is not None
        else ""
    )
    why = (
        Message(
            "fired: {ratio:.1f}× meets {thresholds}{beyond}",
            ratio=ratio,
            thresholds=_thresholds(),
            beyond=beyond,
        )
        if not reasons
        else Message(
            "did not fire: {reasons}",
            reasons=reasons[0]
            if len(reasons) == 1
            else Message("{first}; {second}", first=reasons[0], second=reasons[1]),
        )
    )
    if asked is not None:
        why = Message(
            "{why}; the {asked:,}-token prompt asked for is beyond the longest length "
            "measured, read at {tokens:,} tokens, not extrapolated",
            why=why,
            asked=asked,
            tokens=tokens,
        )
    return why


def input_length(f: Facts) -> Finding | None:
    """The finding when the fitted growth from the shortest length to the long prompt
    lies past what a healthy endpoint's prefill adds (the reference profile's slow edge,
    ``prefill_ms_per_1k``) and follows the length beyond the requests' jitter; its share
    is the growth, its excess the growth past healthy. Its confidence is by the requests
    on the curve and how far the growth lies past the healthy one."""
    check = length_check(f)
    if check is None or check.excess_ms <= 0 or f.curve is None:
        return None
    n = sum(p.n for p in f.curve.points)
    healthy = f.reference["prefill_ms_per_1k"]
    reference = check.reference_growth_ms or 0.0
    certain = confidence(n, check.growth_ms / max(reference, 1e-9) - 1)
    curve = f.curve
    seed = Message(
        "{ratio:.1f}×, {fired}",
        ratio=check.ratio,
        fired=Message("fired") if check.fired else Message("did not fire"),
    )
    return Finding(
        Kind.INPUT_LENGTH,
        N_("Prefill grows with the prompt"),
        Message(
            "the fitted TTFT grows by {growth:.0f} ms from {short} to {long} tokens, past the "
            "{reference:.0f} ms of a prefill at the slow edge of healthy, {edge:.0f} ms per 1K "
            "tokens (hosted models' prefill costs ~{typical:.0f} ms per 1K: {source}), beyond "
            "the requests' jitter; curve {shape}; seed rule ({thresholds}): {seed}",
            growth=check.growth_ms,
            short=check.short_tokens,
            long=check.long_tokens,
            reference=reference,
            edge=healthy.slow_edge,
            typical=healthy.typical,
            source=healthy.cited(),
            shape=Message(curve.shape),
            thresholds=_thresholds(),
            seed=seed,
        ),
        {
            "short_tokens": float(check.short_tokens),
            "short_ttft_ms": check.short_ms,
            "long_tokens": float(check.long_tokens),
            "long_ttft_ms": check.long_ms,
            "ratio": check.ratio,
            "prefill_per_1k_ms": curve.prefill_ms_per_1k,
        },
        share_ms=check.growth_ms,
        excess_ms=check.excess_ms,
        n=n,
        confidence=certain,
    )


SPEC = KindSpec(
    Kind.INPUT_LENGTH,
    N_("Input length"),
    N_("prefill grows with the prompt"),
    colour="#4a80e0",
    rule=input_length,
    in_the_slot=True,
    before_first_token=True,
)
