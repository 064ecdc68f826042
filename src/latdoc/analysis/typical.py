"""The user's typical request: the one every share, the noticeable bar and the verdict
speak of (:class:`~latdoc.model.Workload`).

A request of the user's prompt (``diagnose --prompt-tokens``; the seed's long prompt,
2K tokens, where they did not tell it), the output the run's requests produced, at the
concurrency they declared. Its time is the shortest length's typical request (the
median end-to-end time of the warm requests sent alone), plus what the fitted length
curve adds from the shortest length to its prompt (input length's share of it), plus
what the kinds add beyond a request sent alone (the wait among the user's concurrency):
the one time the kinds' shares are parts of. A
prompt beyond the longest length measured is read at that longest, never
extrapolated; one no longer than the shortest adds nothing.

Where the user did not tell their prompt, :func:`longer_prompt` finds the shortest
longer length the run measured at which input length would be named and noticeable,
so the report can say that one line instead of "healthy" alone.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from latdoc.analysis.facts import Facts, alone_at_one_length
from latdoc.analysis.kinds.input_length import check_at
from latdoc.analysis.noticeable import share_noticeable
from latdoc.model import (
    Kind,
    LengthCheck,
    LongerPrompt,
    NoticeableBar,
    PromptSource,
    Verdict,
    Workload,
)
from latdoc.records import Sample, Step

__all__ = ["growth_to", "longer_prompt", "typical_workload"]


def growth_to(check: LengthCheck | None) -> float:
    """What input length adds to the typical request: the fitted growth from the shortest
    length to the rule's long prompt, never below zero; 0 without a curve."""
    return 0.0 if check is None else max(0.0, check.growth_ms)


def typical_workload(
    samples: Sequence[Sample],
    check: LengthCheck | None,
    bar: NoticeableBar | None,
    concurrency: int,
    told: int | None,
    source: PromptSource = "told",
    *,
    beyond_alone_ms: float = 0.0,
) -> Workload | None:
    """The typical request of this run, whose time the bar was read against; None without
    a bar (no identical request succeeded). ``told`` is the user's prompt, if given, or
    their recorded requests' (``source`` says which); ``beyond_alone_ms`` what the kinds
    add to it beyond a request sent alone, which the bar holds."""
    if bar is None:
        return None
    alone = alone_at_one_length(samples) or [
        s for s in samples if s.step == Step.NETWORK and s.trace.ok
    ]
    growth = growth_to(check)
    if check is not None:
        prompt: int | None = check.long_tokens
    else:
        prompt = told if told is not None else _asked_length(alone)
    outputs = [t.output_tokens for s in alone if (t := s.trace).output_tokens is not None]
    return Workload(
        prompt_tokens=prompt,
        output_tokens=round(statistics.median(outputs)) if outputs else None,
        concurrency=concurrency,
        total_ms=bar.typical_ms,
        short_ms=bar.typical_ms - growth - beyond_alone_ms,
        growth_ms=growth,
        source=source if told is not None else "seed",
        asked_tokens=None if check is None else check.asked_tokens,
        beyond_alone_ms=beyond_alone_ms,
    )


def _asked_length(alone: Sequence[Sample]) -> int | None:
    asked = Counter(s.target_prompt_tokens for s in alone if s.target_prompt_tokens is not None)
    return asked.most_common(1)[0][0] if asked else None


def longer_prompt(
    facts: Facts,
    check: LengthCheck | None,
    bar: NoticeableBar | None,
    verdict: Verdict,
    *,
    beyond_alone_ms: float = 0.0,
) -> LongerPrompt | None:
    """The shortest measured length beyond the rule's long prompt (beyond the shortest
    length where the typical prompt is no longer: recorded traffic's median may be) at
    which input length's growth past healthy is noticeable against a typical request of
    that prompt; None when input length is already named, no such length was
    measured, or the curve has no interval to print its growth with."""
    if Kind.INPUT_LENGTH in (verdict.primary, *verdict.contributing):
        return None
    if bar is None or facts.curve is None:
        return None
    floor = facts.curve.points[0].prompt_tokens if check is None else check.long_tokens
    short_ms = bar.typical_ms - growth_to(check) - beyond_alone_ms
    for point in facts.curve.points:
        if point.prompt_tokens <= floor:
            continue
        at = check_at(facts, point.prompt_tokens)
        if at is None or at.excess_ms <= 0 or at.growth_interval_ms is None:
            continue
        longer_bar = replace(bar, typical_ms=short_ms + growth_to(at) + beyond_alone_ms)
        if share_noticeable(Kind.INPUT_LENGTH, at.excess_ms, longer_bar):
            return LongerPrompt(at.long_tokens, at.growth_ms, at.growth_interval_ms, at.ratio)
    return None
