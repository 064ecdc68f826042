"""Two sets of requests compared like with like, with intervals and significance.

A comparison pairs the requests of A and B that were sent under the same
conditions (:class:`GroupKey`: the step, the prompt length asked for, the
concurrency, new connection or not) and, for each metric, gives both medians,
the difference B − A and the ratio A ÷ B with 95% bootstrap confidence
intervals, and a two-sided Mann–Whitney p-value. Because one comparison runs
many tests, the p-values are adjusted for multiplicity (Holm), so a comparison
of an endpoint with itself reports "no significant difference" at least 95% of
the time, whatever the number of metrics.

Lower is better for every metric here (they are all latencies), so a ratio
A ÷ B above 1 means B is faster.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from latdoc.analysis.stats import difference_ci, mann_whitney_p, ratio_ci
from latdoc.records import RequestTrace, Sample, Step

ALPHA = 0.01
"""Family-wise error rate of one comparison of two runs: every metric of every group
is tested, so a comparison of an endpoint with itself must stay quiet, as a whole,
nearly always (Holm keeps the family below this)."""
EXPERIMENT_ALPHA = 0.05
"""An experiment's one headline test, chosen before it ran (no family to correct)."""
NEGLIGIBLE_MS = 1.0
NEGLIGIBLE_SHARE = 0.02
"""An experiment's difference below both this many ms and this share of A's median is
too small to call a remedy better or worse, however significant: timer and event-loop
noise of the measuring client alone is of this order."""
RESOLUTION_MS = 0.1
"""A compared metric's difference below both this and :data:`NEGLIGIBLE_SHARE` of A is
reported as no significant difference: two runs of one unchanged endpoint on a shared
machine differ by tens of microseconds in pool wait and server wait, consistently
enough for a rank test, and no user can act on that."""

Metric = Callable[[RequestTrace], float | None]

MEDIAN = "median"
TRIAL_MEAN = "trial mean"
"""Each trial's mean, then the median over trials. Requests sent at once through a
pool smaller than their number finish in waves: the mean of a trial counts every wave
once, and the median over trials keeps one stalled trial (a machine's pause, a slow
request that held its connection) from moving the answer, as it moves a mean over
every request."""

METRICS: tuple[tuple[str, str, Metric], ...] = (
    ("ttft", "TTFT", lambda t: t.ttft_ms),
    ("tpot", "TPOT", lambda t: t.tpot_ms),
    ("total", "total", lambda t: t.total_ms),
    ("setup", "network setup", lambda t: t.setup_ms),
    ("server_wait", "server wait", lambda t: t.wait_ms),
    ("queue", "client queue", lambda t: t.queue_ms),
    ("reasoning", "reasoning", lambda t: t.reasoning_ms),
)
"""(key, label, how to read it from a trace), in milliseconds. A metric no trace of a
side measured (reasoning, where nothing thinks) gives no row."""


@dataclass(frozen=True, slots=True, order=True)
class GroupKey:
    """The conditions requests were sent under; only like is compared with like."""

    step: str
    prompt_tokens: int | None
    concurrency: int
    cold: bool

    def label(self) -> str:
        parts = [self.step]
        if self.prompt_tokens is not None:
            parts.append(f"{self.prompt_tokens} prompt tokens")
        if self.step == "arrivals":
            parts.append(f"rate level {self.concurrency}")
        elif self.concurrency > 1:
            parts.append(f"{self.concurrency} at once")
        if self.step in _SPLIT_BY_CONNECTION:
            parts.append("new connection" if self.cold else "reused connection")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class MetricComparison:
    """One metric of one group: A against B."""

    key: str
    label: str
    n_a: int
    n_b: int
    a_ms: float
    b_ms: float
    """A's and B's :attr:`statistic` of the metric."""
    difference_ms: float
    """B − A: negative when B is faster."""
    difference_ci_ms: tuple[float, float] | None
    ratio: float | None
    """A ÷ B: above 1 when B is faster; ``None`` when B's is 0."""
    ratio_ci: tuple[float, float] | None
    p_value: float | None
    """Two-sided Mann–Whitney p, before adjustment."""
    p_adjusted: float | None
    """Holm-adjusted over every test of the comparison."""
    statistic: str = "median"
    """:data:`MEDIAN` of the requests, or :data:`TRIAL_MEAN` where requests sent at once
    come in waves (a median would fall anywhere between two waves); ``n_a`` and ``n_b``
    then count trials."""

    @property
    def significant(self) -> bool:
        """Adjusted p below :data:`ALPHA`, and a difference above the clock's resolution."""
        if self.p_adjusted is None or self.p_adjusted >= ALPHA:
            return False
        return abs(self.difference_ms) >= max(RESOLUTION_MS, NEGLIGIBLE_SHARE * self.a_ms)

    @property
    def faster(self) -> str | None:
        """``"A"`` or ``"B"`` when the difference is significant, else ``None``."""
        if not self.significant:
            return None
        return "B" if self.b_ms < self.a_ms else "A"


@dataclass(frozen=True, slots=True)
class GroupComparison:
    """One group of like requests (the same step, prompt length and concurrency) in
    both runs, compared metric by metric."""

    key: GroupKey
    metrics: tuple[MetricComparison, ...]

    def get(self, metric: str) -> MetricComparison | None:
        return next((m for m in self.metrics if m.key == metric), None)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every group both sides have, and the groups only one side has."""

    groups: tuple[GroupComparison, ...]
    only_a: tuple[GroupKey, ...] = ()
    only_b: tuple[GroupKey, ...] = ()
    failed_a: int = 0
    failed_b: int = 0

    def headline(self, metric: str = "ttft") -> MetricComparison | None:
        """``metric`` of the group with the most requests (ties: the first group)."""
        best: MetricComparison | None = None
        for group in self.groups:
            m = group.get(metric)
            if m is not None and (best is None or m.n_a + m.n_b > best.n_a + best.n_b):
                best = m
        return best


_SPLIT_BY_CONNECTION = frozenset({Step.NETWORK, Step.PROBE})
"""Steps whose new-connection requests are compared apart from the reused ones (an
experiment's arms differ in exactly that on purpose, so they are not split)."""


def group_key(sample: Sample) -> GroupKey:
    """The conditions of a request; an experiment's arms differ on purpose (a trimmed
    prompt, a new connection), so the arm's requests are one group whatever their length."""
    cold = sample.cold if sample.step in _SPLIT_BY_CONNECTION else False
    tokens = None if sample.step == Step.EXPERIMENT else sample.target_prompt_tokens
    return GroupKey(str(sample.step), tokens, sample.concurrency, cold)


def compare_samples(
    a: Sequence[Sample],
    b: Sequence[Sample],
    *,
    metrics: Sequence[str] | None = None,
    seed: int = 0,
) -> Comparison:
    """Compare the successful requests of A and B group by group (calibration left out)."""
    groups_a, groups_b = _groups(a), _groups(b)
    chosen = [m for m in METRICS if metrics is None or m[0] in metrics]
    raw: list[tuple[GroupKey, list[MetricComparison]]] = []
    for key in sorted(groups_a.keys() & groups_b.keys()):
        rows = [
            row
            for name, label, read in chosen
            if (row := compare_values(name, label, groups_a[key], groups_b[key], read, seed))
            is not None
        ]
        if rows:
            raw.append((key, rows))
    adjusted = _holm([m.p_value for _, rows in raw for m in rows])
    out: list[GroupComparison] = []
    position = 0
    for key, rows in raw:
        fixed = []
        for m in rows:
            fixed.append(replace(m, p_adjusted=adjusted[position]))
            position += 1
        out.append(GroupComparison(key, tuple(fixed)))
    return Comparison(
        groups=tuple(out),
        only_a=tuple(sorted(groups_a.keys() - groups_b.keys())),
        only_b=tuple(sorted(groups_b.keys() - groups_a.keys())),
        failed_a=sum(1 for s in a if s.step != Step.CALIBRATION and not s.trace.ok),
        failed_b=sum(1 for s in b if s.step != Step.CALIBRATION and not s.trace.ok),
    )


def compare_values(
    key: str,
    label: str,
    a: Sequence[RequestTrace],
    b: Sequence[RequestTrace],
    read: Metric,
    seed: int = 0,
) -> MetricComparison | None:
    """One metric of A against B by its median; ``None`` when a side has fewer than two
    measured values, or every value on both sides is zero (a reused connection's setup:
    nothing to compare)."""
    xs = [v for v in (read(t) for t in a) if v is not None]
    ys = [v for v in (read(t) for t in b) if v is not None]
    return _compare(key, label, xs, ys, seed, MEDIAN)


def compare_arms(
    key: str,
    label: str,
    a: Sequence[Sample],
    b: Sequence[Sample],
    read: Metric,
    *,
    seed: int = 0,
    statistic: str = MEDIAN,
) -> MetricComparison | None:
    """An experiment's headline: :func:`compare_values` over the successful requests, or,
    with :data:`TRIAL_MEAN`, the median over trials of each trial's mean."""
    xs, ys = _arm_values(a, read, statistic), _arm_values(b, read, statistic)
    return _compare(key, label, xs, ys, seed, statistic)


def _compare(
    key: str, label: str, xs: list[float], ys: list[float], seed: int, statistic: str
) -> MetricComparison | None:
    if len(xs) < 2 or len(ys) < 2 or not any(xs + ys):
        return None
    med_a, med_b = float(np.median(xs)), float(np.median(ys))
    return MetricComparison(
        key=key,
        label=label,
        n_a=len(xs),
        n_b=len(ys),
        a_ms=med_a,
        b_ms=med_b,
        difference_ms=med_b - med_a,
        difference_ci_ms=difference_ci(ys, xs, seed=seed),
        ratio=med_a / med_b if med_b > 0 else None,
        ratio_ci=ratio_ci(xs, ys, seed=seed),
        p_value=mann_whitney_p(xs, ys),
        p_adjusted=None,
        statistic=statistic,
    )


def trial_means(samples: Sequence[Sample], read: Metric) -> list[float]:
    """Each trial's mean of ``read`` over its successful requests, in the order sent. A
    trial's ``concurrency`` requests were sent at once and numbered one after another."""
    ordered = sorted((s for s in samples if s.step != Step.CALIBRATION), key=lambda s: s.index)
    out: list[float] = []
    start = 0
    while start < len(ordered):
        trial = ordered[start : start + max(1, ordered[start].concurrency)]
        values = _measured(trial, read)
        if values:
            out.append(float(np.mean(values)))
        start += len(trial)
    return out


def _arm_values(samples: Sequence[Sample], read: Metric, statistic: str) -> list[float]:
    return trial_means(samples, read) if statistic == TRIAL_MEAN else _measured(samples, read)


def _measured(samples: Sequence[Sample], read: Metric) -> list[float]:
    return [v for s in samples if s.trace.ok and (v := read(s.trace)) is not None]


def experiment_verdict(headline: MetricComparison | None) -> str:
    """``better`` when B is significantly faster on the headline metric (tested alone,
    p < :data:`EXPERIMENT_ALPHA`, the difference's interval clear of 0, the difference not
    negligible), ``worse`` when slower, else ``no_difference``; ``not_applicable``
    without a comparison."""
    if headline is None:
        return "not_applicable"
    p, ci = headline.p_value, headline.difference_ci_ms
    if p is None or p >= EXPERIMENT_ALPHA or ci is None or ci[0] <= 0 <= ci[1]:
        return "no_difference"
    margin = max(NEGLIGIBLE_MS, NEGLIGIBLE_SHARE * headline.a_ms)
    if abs(headline.difference_ms) < margin:
        return "no_difference"
    return "better" if headline.difference_ms < 0 else "worse"


def ratio_precision(
    a: Sequence[Sample],
    b: Sequence[Sample],
    read: Metric,
    *,
    seed: int = 0,
    statistic: str = MEDIAN,
) -> float:
    """Half the width of the 95% interval of A ÷ B, relative to the ratio, for the
    headline :func:`compare_arms` would give: how precisely the experiment knows its
    answer so far (``inf`` while unknown)."""
    xs, ys = _arm_values(a, read, statistic), _arm_values(b, read, statistic)
    if len(xs) < 2 or len(ys) < 2:
        return float("inf")
    ci = ratio_ci(xs, ys, seed=seed, resamples=500)
    ratio = float(np.median(xs)) / float(np.median(ys)) if np.median(ys) > 0 else 0.0
    if ci is None or ratio <= 0:
        return float("inf")
    return (ci[1] - ci[0]) / 2 / ratio


def _groups(samples: Sequence[Sample]) -> Mapping[GroupKey, list[RequestTrace]]:
    groups: dict[GroupKey, list[RequestTrace]] = defaultdict(list)
    for s in samples:
        if s.step != Step.CALIBRATION and s.trace.ok:
            groups[group_key(s)].append(s.trace)
    return groups


def _holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm–Bonferroni adjusted p-values, in the order given (``None`` stays ``None``)."""
    order = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(order)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
