"""What an experiment's arms say: the verdict, which is the headline row of their
comparison, and what their samples say beyond it."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from latdoc.analysis.compare import Comparison, Headline, compare_samples, experiment_verdict
from latdoc.records import Sample

NOT_APPLICABLE = "not_applicable"
"""The verdict where the remedy cannot be shown on this endpoint, with the reason."""
TRADE = "trade"
"""The verdict on a remedy that is faster but fails significantly more of the user's
checks: never ``better``."""


def judge_arms(
    a: Sequence[Sample], b: Sequence[Sample], *, metric: str, statistic: str, seed: int = 0
) -> tuple[str, Comparison]:
    """The verdict on arms A and B, and their comparison. The verdict is read from the
    comparison's headline row (``metric`` by ``statistic``, tested alone), so the table
    and the verdict printed under it are one test and cannot disagree; the rest of the
    table is read after it, so the screen as a whole errs at most α."""
    comparison = compare_samples(a, b, seed=seed, headline=Headline(metric, statistic))
    return experiment_verdict(comparison.primary), comparison


def cached_prompt_tokens(samples: Sequence[Sample]) -> float | None:
    """The median prompt tokens the server reported cached, over the samples that say."""
    known = [s.trace.cached_prompt_tokens for s in samples]
    reported = [n for n in known if n is not None]
    return float(statistics.median(reported)) if reported else None


def weigh_checks(verdict: str, quality: str | None) -> str:
    """The verdict once the user's checks are read: they can only take from it. A B that
    is faster but fails significantly more of them is a :data:`TRADE`, one no faster that
    fails more is ``worse``; otherwise (``quality`` ``no_difference`` or ``better``, or
    not judged) the latency verdict stands."""
    if quality != "worse":
        return verdict
    return {"better": TRADE, "no_difference": "worse"}.get(verdict, verdict)
