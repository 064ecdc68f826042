"""Words every renderer shares about how far to trust a number: a remedy's gain and
its source, the verdict's confidence against the truth bank, the network and
input-length rules' comparisons, keep-alive's saving, the negligible kinds' bar; each in
the active language (:mod:`latdoc.i18n`)."""

from __future__ import annotations

import math

from latdoc.i18n import N_, say, translate
from latdoc.i18n import gettext as _
from latdoc.model import Diagnosis, LengthCheck, Remedy, Verdict
from latdoc.report.names import format_ms, kind_word

GAIN_SOURCES = {
    "measured": N_("measured in this run"),
    "fitted": N_("fitted from the length curve"),
}
"""What each ``Remedy.gain_source`` means, in the user's words."""


def gain_text(r: Remedy) -> str | None:
    """``saves 167.2 ms (95% CI 150.1 ms … 181.0 ms), fitted from the length curve``;
    None when the remedy has no gain."""
    if r.predicted_gain_ms is None or r.gain_source is None:
        return None
    source = _(GAIN_SOURCES[r.gain_source])
    if r.gain_interval_ms is None:
        return say("saves {ms}, {source}", ms=format_ms(r.predicted_gain_ms), source=source)
    low, high = r.gain_interval_ms
    return say(
        "saves {ms} (95% CI {low} … {high}), {source}",
        ms=format_ms(r.predicted_gain_ms),
        low=format_ms(low),
        high=format_ms(high),
        source=source,
    )


def shown_probability(p: float) -> float:
    """``p`` rounded down to a hundredth: a probability of 0.996 shows as 0.99, never as
    the certainty 1.00 that no finite bank can measure."""
    return math.floor(p * 100 + 1e-9) / 100


def bank_accuracy_text(v: Verdict) -> str | None:
    """``verdicts of this kind were right 96% of the time in the truth bank (n = 812)``;
    None when the verdict was not calibrated or the bank never named its kind."""
    if v.bank_accuracy is None or v.bank_n is None:
        return None
    return say(
        "verdicts of this kind were right {share:.0%} of the time in the truth bank (n = {n})",
        share=v.bank_accuracy,
        n=v.bank_n,
    )


def near_threshold_text(v: Verdict) -> str | None:
    """``near a threshold: a second run may say otherwise (next: queueing)``; None when the
    verdict is not near one."""
    if not v.near_threshold:
        return None
    if v.runner_up is None:
        return _("near a threshold: a second run may say otherwise")
    return say(
        "near a threshold: a second run may say otherwise (next in line: {kind})",
        kind=kind_word(v.runner_up),
    )


def unmeasured_text(r: Remedy) -> str:
    """What a remedy without a gain says instead of a number."""
    if r.verify_command is not None:
        return _("not measured here — measure it: ")
    if r.how_to_measure is not None:
        return say("not measured here — measure it: {how}", how=translate(r.how_to_measure))
    return _("not measured here")


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
        if new is None or reused is None:
            return say("keep-alive saves {ms} of first-byte time per request", ms=format_ms(saving))
        return say(
            "keep-alive saves {ms} of first-byte time per request (median of {new:.0f} new "
            "vs {reused:.0f} reused connections, same prompt length)",
            ms=format_ms(saving),
            new=new,
            reused=reused,
        )
    check = d.network_check
    if check is None or check.keepalive_why is None:
        return None
    return say("keep-alive saving not measured: {why}", why=translate(check.keepalive_why))


def length_rule_text(check: LengthCheck) -> str:
    """What the input-length rule compared and whether it fired, in its own numbers."""
    return say(
        "seed rule: fitted TTFT at {long_tokens:,} tokens {long} vs {short} at "
        "{short_tokens:,} = {ratio:.1f}× (+{growth}); {why}",
        long_tokens=check.long_tokens,
        long=format_ms(check.long_ms),
        short=format_ms(check.short_ms),
        short_tokens=check.short_tokens,
        ratio=check.ratio,
        growth=format_ms(check.growth_ms),
        why=translate(check.why),
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
    return say(
        "longest ÷ shortest measured ({long:,} vs {short:,} tokens, not the rule's "
        "comparison): {ratio:.1f}×",
        long=long,
        short=short,
        ratio=curve.ratio_long_short,
    )


def negligible_bar_text(d: Diagnosis) -> str | None:
    """``each adds less than 10% of the typical request's 61.4 ms, or no more than
    identical requests vary (…)``: the request the shares are of."""
    bar = d.noticeable
    if bar is None:
        return None
    noise = say("end to end {ms}", ms=format_ms(bar.noise_ms))
    if bar.ttft_noise_ms is not None:
        noise = say(
            "to first token {ms}, {end_to_end}", ms=format_ms(bar.ttft_noise_ms), end_to_end=noise
        )
    return say(
        "each adds less than {share:.0%} of the typical request's {ms}, or no more than "
        "identical requests vary ({noise})",
        share=bar.fraction,
        ms=format_ms(bar.typical_ms),
        noise=noise,
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
    text = say(
        "Shares are of {request}: {ms} end to end",
        request=translate(w.text()),
        ms=format_ms(w.total_ms),
    )
    parts: list[str] = []
    if w.growth_ms > 0 and d.length_check is not None:
        parts.append(
            say(
                "{short} at {tokens:,} tokens + {growth} of prefill, fitted",
                short=format_ms(w.short_ms),
                tokens=d.length_check.short_tokens,
                growth=format_ms(w.growth_ms),
            )
        )
    elif w.beyond_alone_ms > 0:
        parts.append(say("{short} sent alone", short=format_ms(w.short_ms)))
    if w.beyond_alone_ms > 0:
        kinds = [kind_word(f.kind) for f in d.findings if f.beyond_alone_ms > 0]
        parts.append(
            say(
                "{ms} that {kinds} adds beyond a request sent alone",
                ms=format_ms(w.beyond_alone_ms),
                kinds=", ".join(dict.fromkeys(kinds)),
            )
        )
    if parts:
        text += " (" + " + ".join(parts) + ")"
    if w.asked_tokens is not None:
        beyond = (
            N_(
                "; the {tokens:,}-token prompt your recorded requests' median is beyond the "
                "longest length measured: read there, not extrapolated"
            )
            if w.source == "recorded"
            else N_(
                "; the {tokens:,}-token prompt asked for is beyond the longest length "
                "measured: read there, not extrapolated"
            )
        )
        text += say(beyond, tokens=w.asked_tokens)
    elif w.source == "recorded" and w.prompt_tokens is not None:
        text += _("; your recorded requests' median prompt: --prompt-tokens N for another")
    elif w.source == "seed" and w.prompt_tokens is not None:
        text += _("; the seed's long prompt: --prompt-tokens N for yours")
    return text


def longer_prompt_text(d: Diagnosis) -> str | None:
    """``At 8,192 prompt tokens input length would add 2.20 s (95% CI 1.9 s … 2.5 s): 15.3×
    the 128-token TTFT; ask with --prompt-tokens 8192``; None when no longer prompt
    would change the verdict."""
    longer, check = d.longer_prompt, d.length_check
    if longer is None or check is None:
        return None
    low, high = longer.growth_interval_ms
    return say(
        "At {tokens:,} prompt tokens input length would add {growth} (95% CI {low} … "
        "{high}): {ratio:.1f}× the {short_tokens:,}-token TTFT, past what a healthy prefill "
        "adds; if your prompts are that long, ask with --prompt-tokens {tokens}",
        tokens=longer.prompt_tokens,
        growth=format_ms(longer.growth_ms),
        low=format_ms(low),
        high=format_ms(high),
        ratio=longer.ratio,
        short_tokens=check.short_tokens,
    )


def reference_text(d: Diagnosis) -> str | None:
    """``healthy is your reference: our fleet (fleet.toml)``, or for another run's
    measured values ``healthy is your reference: run X; against it, decode adds 0.90 s
    and network_path 0.20 s to this request``; None for the profile latdoc ships."""
    if d.reference is None:
        return None
    name, origin = d.reference
    if not (origin == name and origin.startswith("run ")):
        return say("healthy is your reference: {name} ({origin})", name=name, origin=origin)
    beyond = sorted((f for f in d.findings if f.excess_ms > 0), key=lambda f: -f.excess_ms)
    if not beyond:
        return say(
            "healthy is your reference: {run}; against it, no kind adds to this request",
            run=name,
        )
    parts = []
    for f in beyond:
        parts.append(say("{kind} adds {ms}", kind=kind_word(f.kind), ms=format_ms(f.excess_ms)))
    return say(
        "healthy is your reference: {run}; against it, {parts} to this request",
        run=name,
        parts=", ".join(parts),
    )
