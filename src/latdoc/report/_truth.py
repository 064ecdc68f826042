"""Words every renderer shares about how far to trust a number: a remedy's gain and
its source, the verdict's confidence against the truth bank, the network and
input-length rules' comparisons, keep-alive's saving, the negligible kinds' bar."""

from __future__ import annotations

import math

from latdoc.model import Diagnosis, LengthCheck, Remedy, Verdict
from latdoc.report.names import format_ms

GAIN_SOURCES = {
    "measured": "measured in this run",
    "fitted": "fitted from the length curve",
}
"""What each ``Remedy.gain_source`` means, in the user's words."""


def gain_text(r: Remedy) -> str | None:
    """``saves 167.2 ms (95% CI 150.1 ms … 181.0 ms), fitted from the length curve``;
    None when the remedy has no gain."""
    if r.predicted_gain_ms is None or r.gain_source is None:
        return None
    text = f"saves {format_ms(r.predicted_gain_ms)}"
    if r.gain_interval_ms is not None:
        low, high = r.gain_interval_ms
        text += f" (95% CI {format_ms(low)} … {format_ms(high)})"
    return f"{text}, {GAIN_SOURCES[r.gain_source]}"


def shown_probability(p: float) -> float:
    """``p`` rounded down to a hundredth: a probability of 0.996 shows as 0.99, never as
    the certainty 1.00 that no finite bank can measure."""
    return math.floor(p * 100 + 1e-9) / 100


def bank_accuracy_text(v: Verdict) -> str | None:
    """``verdicts of this kind were right 96% of the time in the truth bank (n = 812)``;
    None when the verdict was not calibrated or the bank never named its kind."""
    if v.bank_accuracy is None or v.bank_n is None:
        return None
    return (
        f"verdicts of this kind were right {v.bank_accuracy:.0%} of the time "
        f"in the truth bank (n = {v.bank_n})"
    )


def near_threshold_text(v: Verdict) -> str | None:
    """``near a threshold: a second run may say otherwise (next: queueing)``; None when the
    verdict is not near one."""
    if not v.near_threshold:
        return None
    runner = "" if v.runner_up is None else f" (next in line: {v.runner_up})"
    return f"near a threshold: a second run may say otherwise{runner}"


def unmeasured_text(r: Remedy) -> str:
    """What a remedy without a gain says instead of a number."""
    if r.verify_command is not None:
        return "not measured here — measure it: "
    if r.how_to_measure is not None:
        return f"not measured here — measure it: {r.how_to_measure}"
    return "not measured here"


def keepalive_text(d: Diagnosis) -> str | None:
    """``keep-alive saves 12.3 ms of first-byte time per request (…)`` when it was
    measured, else why not; None when there was nothing to say (no network step, or
    reused connections were not faster)."""
    n = d.network
    saving = n.get("keepalive_saving_ms")
    if saving is not None:
        if saving <= 0:
            return None
        new, reused = n.get("keepalive_new_n"), n.get("keepalive_reused_n")
        told = f"keep-alive saves {format_ms(saving)} of first-byte time per request"
        if new is not None and reused is not None:
            told += (
                f" (median of {new:.0f} new vs {reused:.0f} reused connections, same prompt length)"
            )
        return told
    check = d.network_check
    if check is None or check.keepalive_why is None:
        return None
    return f"keep-alive saving not measured: {check.keepalive_why}"


def length_rule_text(check: LengthCheck) -> str:
    """What the input-length rule compared and whether it fired, in its own numbers."""
    return (
        f"seed rule: fitted TTFT at {check.long_tokens:,} tokens {format_ms(check.long_ms)} "
        f"vs {format_ms(check.short_ms)} at {check.short_tokens:,} = {check.ratio:.1f}× "
        f"(+{format_ms(check.growth_ms)}); {check.why}"
    )


def longest_ratio_text(d: Diagnosis) -> str | None:
    """The longest-vs-shortest ratio, labelled as what it is."""
    curve = d.length
    if curve is None or len(curve.points) < 2:
        return None
    short, long = curve.points[0].prompt_tokens, curve.points[-1].prompt_tokens
    check = d.length_check
    if check is not None and check.long_tokens == long:
        return None
    return (
        f"longest ÷ shortest measured ({long:,} vs {short:,} tokens, not the rule's "
        f"comparison): {curve.ratio_long_short:.1f}×"
    )


def negligible_bar_text(d: Diagnosis) -> str | None:
    """``each adds less than 10% of the typical request's 61.4 ms, or no more than
    identical requests vary (…)``: the request the shares are of."""
    bar = d.noticeable
    if bar is None:
        return None
    noise = f"end to end {format_ms(bar.noise_ms)}"
    if bar.ttft_noise_ms is not None:
        noise = f"to first token {format_ms(bar.ttft_noise_ms)}, {noise}"
    return (
        f"each adds less than {bar.fraction:.0%} of the typical request's "
        f"{format_ms(bar.typical_ms)}, or no more than identical requests vary "
        f"({noise})"
    )


def workload_text(d: Diagnosis) -> str | None:
    """``Shares are of a typical request of 2,048 prompt tokens, 32 output tokens, at
    concurrency 4: 1.23 s end to end; the seed's long prompt: --prompt-tokens N for
    yours``, or ``…; your recorded requests' median prompt: --prompt-tokens N for
    another`` where the prompt came from recorded traffic; None without a typical
    request."""
    w = d.workload
    if w is None:
        return None
    text = f"Shares are of {w.text()}: {format_ms(w.total_ms)} end to end"
    if w.growth_ms > 0 and d.length_check is not None:
        text += (
            f" ({format_ms(w.short_ms)} at {d.length_check.short_tokens:,} tokens + "
            f"{format_ms(w.growth_ms)} of prefill, fitted)"
        )
    if w.asked_tokens is not None:
        whose = "your recorded requests' median" if w.source == "recorded" else "asked for"
        text += (
            f"; the {w.asked_tokens:,}-token prompt {whose} is beyond the longest length "
            "measured: read there, not extrapolated"
        )
    elif w.source == "recorded" and w.prompt_tokens is not None:
        text += "; your recorded requests' median prompt: --prompt-tokens N for another"
    elif w.source == "seed" and w.prompt_tokens is not None:
        text += "; the seed's long prompt: --prompt-tokens N for yours"
    return text


def longer_prompt_text(d: Diagnosis) -> str | None:
    """``At 8,192 prompt tokens input length would add 2.20 s (95% CI 1.9 s … 2.5 s): 15.3×
    the 128-token TTFT; ask with --prompt-tokens 8192``; None when no longer prompt
    would change the verdict."""
    longer, check = d.longer_prompt, d.length_check
    if longer is None or check is None:
        return None
    low, high = longer.growth_interval_ms
    return (
        f"At {longer.prompt_tokens:,} prompt tokens input length would add "
        f"{format_ms(longer.growth_ms)} (95% CI {format_ms(low)} … {format_ms(high)}): "
        f"{longer.ratio:.1f}× the {check.short_tokens:,}-token TTFT, which the seed's rule "
        f"names; if your prompts are that long, ask with --prompt-tokens {longer.prompt_tokens}"
    )
