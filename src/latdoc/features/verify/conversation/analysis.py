"""A conversation held in full against the same one under strategies that bound it.

Each strategy answered the same user turns. Turn by turn, its time to first
token is paired with the full conversation's at the same turn: the mean saving
per turn, its 95% interval (Student's t), and a Wilcoxon signed-rank p-value say
whether the strategy is faster. The turns before a strategy first cuts the history
(where the endpoint counted the same prompt as keeping everything) are left out:
they hold only noise, and twelve turns of which five are noise could not call a
saving of hundreds of milliseconds significant. The strategies of one run are one family on one
screen: their p-values are Holm-adjusted together (:mod:`latdoc.analysis.policy`), so
a run of three strategies that change nothing calls one of them better or worse at
most α of the time, not about 2α. Its cost is counted whole: the total time of
every request it sent (the summaries it needed included) and the prompt tokens
it sent, which is what a provider bills.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from latdoc.analysis.policy import ALPHA, negligible
from latdoc.analysis.stats import holm, mean_interval
from latdoc.records import RequestTrace

KEEP = "keep"


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One request a strategy sent at a turn (an answer, or a summary it needed)."""

    strategy: str
    turn: int
    trace: RequestTrace
    summary: bool = False


@dataclass(frozen=True, slots=True)
class StrategyOutcome:
    strategy: str
    ttft_by_turn: tuple[float | None, ...]
    """The answer's TTFT at turns 1, 2, …; ``None`` where the request failed."""
    prompt_tokens_by_turn: tuple[int | None, ...]
    total_ms: float
    """Every request's end-to-end time, summaries included."""
    prompt_tokens: int | None
    """Prompt tokens sent over the conversation, summaries included (``None`` when the
    endpoint reported none)."""
    summary_calls: int
    failed: int
    saving_ms: float | None = None
    """Mean TTFT saved per turn against keeping everything (paired by turn)."""
    saving_ci_ms: tuple[float, float] | None = None
    p_value: float | None = None
    """Wilcoxon signed-rank p of the savings, before adjustment."""
    turns_compared: int = 0
    p_adjusted: float | None = None
    """:attr:`p_value` Holm-adjusted over every strategy of the run: what the verdict
    reads."""

    @property
    def verdict(self) -> str:
        """``better``, ``worse`` or ``no_difference`` against keeping everything."""
        p = self.p_adjusted
        if self.saving_ms is None or p is None or self.saving_ci_ms is None:
            return "no_difference"
        low, high = self.saving_ci_ms
        if p >= ALPHA or low <= 0 <= high:
            return "no_difference"
        known = [t for t in self.ttft_by_turn if t is not None]
        reference = float(np.mean(known)) + self.saving_ms if known else 0.0
        if negligible(self.saving_ms, reference):
            return "no_difference"
        return "better" if self.saving_ms > 0 else "worse"


def outcomes(
    records: Sequence[TurnRecord],
    turns: int,
    *,
    order: Sequence[str] = (),
    seed: int = 0,
) -> list[StrategyOutcome]:
    """Each strategy's outcome in ``order`` (then any other), the others against ``keep``,
    their p-values Holm-adjusted together."""
    by_strategy: dict[str, list[TurnRecord]] = defaultdict(list)
    for r in records:
        by_strategy[r.strategy].append(r)
    names = [n for n in order if n in by_strategy]
    names += [n for n in by_strategy if n not in names]
    plain = {name: _outcome(name, by_strategy[name], turns) for name in names}
    keep = plain.get(KEEP)
    out = [keep] if keep is not None else []
    for name, outcome in plain.items():
        if name == KEEP:
            continue
        out.append(outcome if keep is None else _against(outcome, keep, seed))
    adjusted = holm([o.p_value if o.strategy != KEEP else None for o in out])
    return [replace(o, p_adjusted=p) for o, p in zip(out, adjusted, strict=True)]


def _outcome(name: str, records: Sequence[TurnRecord], turns: int) -> StrategyOutcome:
    ttft: list[float | None] = [None] * turns
    tokens: list[int | None] = [None] * turns
    for r in records:
        if not r.summary and 1 <= r.turn <= turns:
            ttft[r.turn - 1] = r.trace.ttft_ms if r.trace.ok else None
            tokens[r.turn - 1] = r.trace.prompt_tokens
    reported = [r.trace.prompt_tokens for r in records if r.trace.prompt_tokens is not None]
    return StrategyOutcome(
        strategy=name,
        ttft_by_turn=tuple(ttft),
        prompt_tokens_by_turn=tuple(tokens),
        total_ms=sum(r.trace.total_ms or 0.0 for r in records),
        prompt_tokens=sum(reported) if reported else None,
        summary_calls=sum(1 for r in records if r.summary),
        failed=sum(1 for r in records if not r.trace.ok),
    )


def mean_saving_interval(savings: Sequence[float]) -> tuple[float, float] | None:
    """The 95% interval of a strategy's mean saving per turn, from its turns' savings
    (paired by turn): Student's t (:data:`~latdoc.analysis.policy.MEAN_INTERVAL`)."""
    return mean_interval(savings)


def _same_prompt(keep: StrategyOutcome, strategy: StrategyOutcome) -> set[int]:
    """The turns (from 0) where the strategy sent what keeping everything sent (the
    endpoint counted the same prompt tokens): those before it first cuts the history.
    Such a turn says nothing of the strategy, only of the machine's noise, so it is left
    out of the comparison; where a count is missing the turn is compared."""
    return {
        turn
        for turn, (k, s) in enumerate(
            zip(keep.prompt_tokens_by_turn, strategy.prompt_tokens_by_turn, strict=False)
        )
        if k is not None and k == s
    }


def _against(outcome: StrategyOutcome, keep: StrategyOutcome, seed: int) -> StrategyOutcome:
    from scipy.stats import wilcoxon

    same = _same_prompt(keep, outcome)
    pairs = [
        (k, s)
        for turn, (k, s) in enumerate(zip(keep.ttft_by_turn, outcome.ttft_by_turn, strict=False))
        if k is not None and s is not None and turn not in same
    ]
    savings = np.array([k - s for k, s in pairs], dtype=float)
    if savings.size < 2:
        return replace(outcome, turns_compared=int(savings.size))
    p: float | None = None
    if np.any(savings != 0):
        p = float(wilcoxon(savings).pvalue)
    return replace(
        outcome,
        saving_ms=float(np.mean(savings)),
        saving_ci_ms=mean_saving_interval(savings.tolist()),
        p_value=p,
        turns_compared=int(savings.size),
    )
