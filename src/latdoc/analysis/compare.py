"""Two sets of requests compared like with like, with intervals and significance.

A comparison pairs the requests of A and B that were sent under the same
conditions (:class:`GroupKey`: the step, the prompt length asked for, the
concurrency, new connection or not) and, for each metric, gives both medians,
the difference B − A and the ratio A ÷ B with 95% confidence intervals (from the
medians' order statistics, with at least ``MIN_INTERVAL_N`` requests a side), and a
two-sided Mann–Whitney p-value. Because one comparison runs
many tests, the p-values are adjusted for multiplicity (Holm), so a comparison
of an endpoint with itself reports "no significant difference" at least 95% of
the time, whatever the number of metrics. An experiment names its headline (a
metric and its statistic) before it runs: that row is tested alone at α and is the
experiment's verdict; the rest of the table is Holm-adjusted without it and read only
after it (serial gatekeeping: each of its adjusted p-values is at least the
headline's), so one screen, the verdict and the table under it, says "significant" of
a remedy that changes nothing at most α of the time, not α for the verdict and α again
for the table (:mod:`latdoc.analysis.policy` says which tests form a family).

Lower is better for every metric here (they are all latencies), so a ratio
A ÷ B above 1 means B is faster.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from latdoc.analysis.policy import ALPHA, MIN_N, negligible
from latdoc.analysis.stats import difference_ci, holm, mann_whitney_p, ratio_ci
from latdoc.records import RequestTrace, Sample, Step

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
    """Holm-adjusted over every test of its family; the headline's own p (a family of
    one); under a headline, at least the headline's p (the rest is read after it)."""
    statistic: str = "median"
    """:data:`MEDIAN` of the requests, or :data:`TRIAL_MEAN` where requests sent at once
    come in waves (a median would fall anywhere between two waves); ``n_a`` and ``n_b``
    then count trials."""
    headline: bool = False
    """The experiment's headline, named before it ran and tested alone: its verdict."""

    @property
    def significant(self) -> bool:
        """Adjusted p below the policy's α, the difference's interval clear of 0, and the
        difference not negligible (:func:`~latdoc.analysis.policy.negligible`)."""
        if self.p_adjusted is None or self.p_adjusted >= ALPHA:
            return False
        ci = self.difference_ci_ms
        if ci is None or ci[0] <= 0 <= ci[1]:
            return False
        return not negligible(self.difference_ms, self.a_ms)

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

    @property
    def primary(self) -> MetricComparison | None:
        """The experiment's headline row (see :class:`Headline`), if it named one."""
        return next((m for g in self.groups for m in g.metrics if m.headline), None)

    def headline(self, metric: str = "ttft") -> MetricComparison | None:
        """``metric`` of the group with the most requests (ties: the first group)."""
        best: MetricComparison | None = None
        for group in self.groups:
            m = group.get(metric)
            if m is not None and (best is None or m.n_a + m.n_b > best.n_a + best.n_b):
                best = m
        return best


@dataclass(frozen=True, slots=True)
class Headline:
    """An experiment's question, asked before it ran: one metric (a key of
    :data:`METRICS`) by one statistic."""

    metric: str
    statistic: str = MEDIAN


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
    headline: Headline | None = None,
) -> Comparison:
    """Compare the successful requests of A and B group by group (calibration left out).

    With a ``headline``, its metric in the largest group both sides have is compared by
    its statistic and tested alone (p adjusted = p); every other row is Holm-adjusted
    over the others and gated by it: its adjusted p is at least the headline's (1 when
    the headline could not be compared), so no row is significant unless the headline's
    p is, and the verdict with its table errs at most α as a whole."""
    groups_a, groups_b = like_groups(a), like_groups(b)
    common = sorted(groups_a.keys() & groups_b.keys())
    chosen = [m for m in METRICS if metrics is None or m[0] in metrics]
    largest = max(common, key=lambda k: len(groups_a[k]) + len(groups_b[k]), default=None)
    raw: list[tuple[GroupKey, list[MetricComparison]]] = []
    for key in common:
        rows: list[MetricComparison] = []
        for name, label, read in chosen:
            if headline is not None and name == headline.metric and key == largest:
                row = compare_arms(
                    name,
                    label,
                    groups_a[key],
                    groups_b[key],
                    read,
                    seed=seed,
                    statistic=headline.statistic,
                )
                row = None if row is None else replace(row, p_adjusted=row.p_value, headline=True)
            else:
                row = compare_values(
                    name, label, ok_traces(groups_a[key]), ok_traces(groups_b[key]), read, seed
                )
            if row is not None:
                rows.append(row)
        if rows:
            raw.append((key, rows))
    family = [m for _, rows in raw for m in rows if not m.headline]
    adjusted = iter(holm([m.p_value for m in family]))
    gate = None if headline is None else _gate(raw)
    out = [
        GroupComparison(
            key,
            tuple(
                m if m.headline else replace(m, p_adjusted=_after(gate, next(adjusted)))
                for m in rows
            ),
        )
        for key, rows in raw
    ]
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
    if len(xs) < MIN_N or len(ys) < MIN_N or not any(xs + ys):
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
    """The verdict an experiment's headline row gives: ``better`` when it is significant
    (:attr:`MetricComparison.significant`) and B is faster, ``worse`` when A is, else
    ``no_difference``; ``not_applicable`` without a row. The row's own test, so the
    verdict and the table cannot disagree."""
    if headline is None:
        return "not_applicable"
    faster = headline.faster
    if faster is None:
        return "no_difference"
    return "better" if faster == "B" else "worse"


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
    if len(xs) < MIN_N or len(ys) < MIN_N:
        return float("inf")
    ci = ratio_ci(xs, ys)
    ratio = float(np.median(xs)) / float(np.median(ys)) if np.median(ys) > 0 else 0.0
    if ci is None or ratio <= 0:
        return float("inf")
    return (ci[1] - ci[0]) / 2 / ratio


def like_groups(samples: Sequence[Sample]) -> Mapping[GroupKey, list[Sample]]:
    """Every request but calibration by its group, failed ones too (a trial's requests
    are counted by position); a group needs one success to be compared."""
    groups: dict[GroupKey, list[Sample]] = defaultdict(list)
    for s in samples:
        if s.step != Step.CALIBRATION:
            groups[group_key(s)].append(s)
    return {k: v for k, v in groups.items() if any(s.trace.ok for s in v)}


def ok_traces(samples: Sequence[Sample]) -> list[RequestTrace]:
    """The traces of the samples that succeeded."""
    return [s.trace for s in samples if s.trace.ok]


def _gate(raw: Sequence[tuple[GroupKey, Sequence[MetricComparison]]]) -> float:
    """The headline's p, which the rest of an experiment's table is read after; 1 (the
    gate shut) when the headline had too few values to be compared."""
    row = next((m for _, rows in raw for m in rows if m.headline), None)
    return 1.0 if row is None or row.p_value is None else row.p_value


def _after(gate: float | None, p: float | None) -> float | None:
    """``p`` of a family read only after a test of p ``gate``: the larger of the two."""
    return p if p is None or gate is None else max(p, gate)
