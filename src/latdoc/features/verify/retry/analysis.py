"""No retries against a retry policy: how often the application got an answer, how long it took.

Each arm is a set of logical requests (a trial of the policy's arm may have made
several attempts). The success rate comes with its 95% interval (Wilson's, from
scipy's binomial test) and the arms are compared by Fisher's exact test; the
end-to-end time's 95th percentile, waits included, with its interval from order
statistics (from 72 trials).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from latdoc.analysis.policy import ALPHA
from latdoc.analysis.stats import proportion_interval, quantile, quantile_interval


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    """One logical request: did the application get an answer, after how long and how many
    attempts, having waited how long between them."""

    ok: bool
    end_to_end_ms: float
    attempts: int
    waited_s: float


@dataclass(frozen=True, slots=True)
class Reliability:
    trials: int
    succeeded: int
    success_ci: tuple[float, float] | None
    p95_ms: float | None
    p95_ci_ms: tuple[float, float] | None
    attempts_mean: float
    waited_s: float

    @property
    def success_rate(self) -> float:
        return self.succeeded / self.trials if self.trials else 0.0


@dataclass(frozen=True, slots=True)
class RetryComparison:
    a: Reliability
    b: Reliability
    p_value: float | None
    """Fisher's exact test on the two arms' successes and failures."""

    @property
    def verdict(self) -> str:
        """``better`` when B got answers significantly more often, ``worse`` when less often,
        else ``no_difference``; ``not_applicable`` with no trials."""
        if not self.a.trials or not self.b.trials:
            return "not_applicable"
        if self.p_value is None or self.p_value >= ALPHA:
            return "no_difference"
        return "better" if self.b.success_rate > self.a.success_rate else "worse"


def p95_interval(times: Sequence[float]) -> tuple[float, float] | None:
    """The 95% interval of the end-to-end p95 of an arm's trials: the exact pair of order
    statistics (:data:`~latdoc.analysis.policy.QUANTILE_INTERVAL`); none under 72 trials,
    where no value lies above the p95 often enough to bound it."""
    return quantile_interval(times, 0.95)


def reliability(outcomes: Sequence[TrialOutcome], *, seed: int = 0) -> Reliability:
    n = len(outcomes)
    ok = sum(1 for o in outcomes if o.ok)
    times = [o.end_to_end_ms for o in outcomes]
    return Reliability(
        trials=n,
        succeeded=ok,
        success_ci=proportion_interval(ok, n),
        p95_ms=quantile(times, 0.95) if times else None,
        p95_ci_ms=p95_interval(times),
        attempts_mean=float(np.mean([o.attempts for o in outcomes])) if outcomes else 0.0,
        waited_s=sum(o.waited_s for o in outcomes),
    )


def compare_reliability(
    a: Sequence[TrialOutcome], b: Sequence[TrialOutcome], *, seed: int = 0
) -> RetryComparison:
    from scipy.stats import fisher_exact

    ra, rb = reliability(a, seed=seed), reliability(b, seed=seed)
    p = None
    if ra.trials and rb.trials:
        table = [
            [ra.succeeded, ra.trials - ra.succeeded],
            [rb.succeeded, rb.trials - rb.succeeded],
        ]
        p = float(fisher_exact(table).pvalue)
    return RetryComparison(ra, rb, p)
