"""``input_length``, step 2 of the seed's method: does input length make it slow?

The rule compares TTFT at a long prompt (the seed's ~5,000 characters,
:data:`LONG_REFERENCE_TOKENS`; the longest measured for longdoc) with TTFT at the
shortest, both read from the fitted length curve (:mod:`latdoc.analysis.length`), so
every request on the curve counts: the seven to nine sent alone at the shortest length, one
or two at each other. It fires at ≥ :data:`LENGTH_RATIO`×, or at
≥ :data:`LENGTH_MIN_RATIO`× with at least :data:`LENGTH_MIN_GROWTH_MS` more
(:func:`seed_rule_fires`), when the growth is beyond the requests' jitter (a
one-sided t test of the two lengths' log medians at the policy's α, :func:`growth_p`):
the growth follows the length, not the jitter of a few requests. Its comparison is kept as a
:class:`LengthCheck` whether it fires or not, so the report states what the rule
compared in the rule's own numbers. Its share is the fitted growth.

The fastest of the two requests at each length, which the rule read before, runs
short of the typical request by the jitter at every length, and so read less growth
than there was: borderline growth went unnamed.
"""

from __future__ import annotations

import math

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.length import Jitter, jitter
from latdoc.analysis.policy import ALPHA
from latdoc.model import Finding, Kind, LengthCheck, LengthCurve, LengthPoint

__all__ = [
    "LENGTH_MIN_GROWTH_MS",
    "LENGTH_MIN_RATIO",
    "LENGTH_RATIO",
    "LONG_REFERENCE_TOKENS",
    "MONOTONIC_TOLERANCE",
    "SPEC",
    "input_length",
    "length_check",
    "seed_rule_fires",
]

LENGTH_RATIO = 5.0
LENGTH_MIN_RATIO = 2.0
LENGTH_MIN_GROWTH_MS = 1000.0
MONOTONIC_TOLERANCE = 0.9
LONG_REFERENCE_TOKENS = 2048
"""The seed's long prompt (~5,000 characters); longdoc compares the longest measured."""


def seed_rule_fires(short_ms: float, long_ms: float) -> bool:
    """The seed's comparison of TTFT at the long prompt with TTFT at the short one:
    ≥ :data:`LENGTH_RATIO`×, or ≥ :data:`LENGTH_MIN_RATIO`× and
    +:data:`LENGTH_MIN_GROWTH_MS`."""
    ratio = long_ms / max(short_ms, 1e-9)
    growth = long_ms - short_ms
    return ratio >= LENGTH_RATIO or (ratio >= LENGTH_MIN_RATIO and growth >= LENGTH_MIN_GROWTH_MS)


def _long_point(curve: LengthCurve, reference: int | None) -> LengthPoint:
    """The measured length nearest the reference (the longest when there is none)."""
    if reference is None:
        return curve.points[-1]
    return min(curve.points, key=lambda p: (abs(p.prompt_tokens - reference), -p.prompt_tokens))


def _grows_with_length(curve: LengthCurve) -> bool:
    """No longer prompt was served clearly faster than a shorter one (the measured
    medians): read only where the curve has no interval."""
    best = [p.best_ms for p in curve.points]
    return all(later >= MONOTONIC_TOLERANCE * max(best[:i]) for i, later in enumerate(best) if i)


def growth_p(short: LengthPoint, long: LengthPoint, spread: Jitter | None) -> float | None:
    """One-sided p of TTFT at the long length being no more than at the short one, from
    their medians' logs and the requests' jitter (a t test on its degrees of freedom);
    None without a jitter to read."""
    if spread is None or spread.sigma <= 0:
        return None
    from scipy.stats import t  # imported on use, as the analysis's statistics do

    difference = math.log(max(long.best_ms, 1e-9)) - math.log(max(short.best_ms, 1e-9))
    error = spread.sigma * math.sqrt(_median_variance(long.n) + _median_variance(short.n))
    return float(t.sf(difference / error, spread.df))


def _median_variance(n: int) -> float:
    """The variance of the median of ``n`` normal values, in units of theirs: the value
    itself for one, the mean for two, π/(2n) from three."""
    if n <= 2:
        return 1.0 / max(1, n)
    return math.pi / (2 * n)


def _thresholds() -> str:
    return (
        f"≥ {LENGTH_RATIO:.0f}×, or ≥ {LENGTH_MIN_RATIO:.0f}× and "
        f"+{LENGTH_MIN_GROWTH_MS / 1000:.0f} s"
    )


def length_check(f: Facts) -> LengthCheck | None:
    """The rule's comparison; None when fewer than two lengths were measured.

    It reads the fitted curve at the shortest length and at the long one, so every
    request on the curve counts, not the one or two at each end; and the growth counts
    as following the length only when it is beyond the requests' jitter (or, with no
    length asked twice to read the jitter from, when no longer prompt was served
    clearly faster)."""
    curve = f.curve
    if curve is None:
        return None
    short, long = curve.points[0], _long_point(curve, f.long_reference_tokens)
    if long.prompt_tokens <= short.prompt_tokens:
        return None
    short_ms = curve.predict_ms(short.prompt_tokens)
    long_ms = curve.predict_ms(long.prompt_tokens)
    ratio = long_ms / max(short_ms, 1e-9)
    growth = long_ms - short_ms
    p50, spread = f.load["ttft_p50_ms"], f.load["ttft_p95_over_p50"]
    noise = p50 * (spread - 1) if p50 is not None and spread is not None else 0.0
    interval = curve.difference_interval_ms(long.prompt_tokens, short.prompt_tokens)
    p = growth_p(short, long, jitter(curve.points))
    grows = p < ALPHA if p is not None else _grows_with_length(curve)
    reasons = []
    if not seed_rule_fires(short_ms, long_ms):
        reasons.append(f"{ratio:.1f}× and +{growth:.0f} ms fall short of {_thresholds()}")
    if not grows:
        reasons.append(
            f"the growth is within the requests' jitter (one-sided p {p:.2g} ≥ {ALPHA})"
            if p is not None
            else "a longer prompt was served clearly faster than a shorter one"
        )
    fired = not reasons
    beyond = f", beyond the requests' jitter (one-sided p {p:.2g})" if p is not None else ""
    why = (
        f"fired: {ratio:.1f}× meets {_thresholds()}{beyond}"
        if fired
        else "did not fire: " + "; ".join(reasons)
    )
    return LengthCheck(
        short_tokens=short.prompt_tokens,
        short_ms=short_ms,
        long_tokens=long.prompt_tokens,
        long_ms=long_ms,
        ratio=ratio,
        growth_ms=growth,
        noise_ms=noise,
        grows_with_length=grows,
        fired=fired,
        why=why,
        growth_interval_ms=interval,
    )


def input_length(f: Facts) -> Finding | None:
    """The finding when the rule fired, its confidence by the requests on the curve and
    the ratio's margin over :data:`LENGTH_RATIO`."""
    check = length_check(f)
    if check is None or not check.fired or f.curve is None:
        return None
    n = sum(p.n for p in f.curve.points)
    certain = confidence(n, check.ratio / LENGTH_RATIO - 0.5)
    curve = f.curve
    return Finding(
        Kind.INPUT_LENGTH,
        "Prefill grows with the prompt",
        f"the fitted TTFT at {check.long_tokens} tokens is {check.ratio:.1f}× that at "
        f"{check.short_tokens} (seed rule: {_thresholds()}), beyond the requests' jitter; "
        f"curve {curve.shape}",
        {
            "short_tokens": float(check.short_tokens),
            "short_ttft_ms": check.short_ms,
            "long_tokens": float(check.long_tokens),
            "long_ttft_ms": check.long_ms,
            "ratio": check.ratio,
            "prefill_per_1k_ms": curve.prefill_ms_per_1k,
        },
        share_ms=check.growth_ms,
        n=n,
        confidence=certain,
    )


SPEC = KindSpec(
    Kind.INPUT_LENGTH,
    "Input length",
    "prefill grows with the prompt",
    colour="#4a80e0",
    rule=input_length,
    before_first_token=True,
)
