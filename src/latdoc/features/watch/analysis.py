"""Latency by the clock: buckets over a repeating cycle (the day) or plain time, and the
peak against the rest (the mission's step 3, "slow in the daytime, fast at night").

Each request becomes a :class:`ClockPoint`; :func:`clock_report` cuts the points into
buckets of ``bucket_s`` seconds, either by their phase in a cycle of ``cycle_s``
seconds counted from the Unix epoch (so a cycle of 86 400 s is the UTC day and its
buckets are hours of the day) or, with no cycle, by plain time. A store that has
already cut its requests into buckets gives :func:`clock_report_of_buckets` a
:class:`BucketCounts` per bucket and the compared TTFTs of each, and gets the same
report without a point per request.

The peak: among buckets with at least ``PEAK_MIN_BUCKET_TTFTS`` TTFTs, those whose
TTFT median is above the median of the bucket medians by more than
``PEAK_MARGIN`` (:func:`pick_peak`). Their requests are compared with those of every
other bucket: the ratio of TTFT medians with a 95 % interval (from order statistics),
and a p-value that does not reuse the selection: the share of ``PEAK_PERMUTATIONS``
shuffles of the TTFTs across the ranked buckets whose own peak, picked the same way, is
at least as far above its rest.
(Testing the picked buckets as if they had been named in advance called a flat day with
noise a peak 30 to 93 % of the time.) A daily pattern is said only when ``p < ALPHA``
and the whole interval is above
``PEAK_MIN_RATIO``, each of them the statistics policy's (:mod:`latdoc.analysis.policy`);
otherwise there is "no daily pattern". Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from latdoc.analysis.policy import (
    ALPHA,
    PEAK_MARGIN,
    PEAK_MIN_BUCKET_TTFTS,
    PEAK_MIN_RATIO,
    PEAK_PERMUTATION_VALUES,
    PEAK_PERMUTATIONS,
)
from latdoc.analysis.stats import Distribution, quantile, ratio_ci

DAY_S = 86_400.0
HOUR_S = 3_600.0


@dataclass(frozen=True, slots=True)
class ClockPoint:
    """One request as the clock report sees it."""

    at: datetime
    ttft_ms: float | None
    tpot_ms: float | None
    ok: bool
    compared: bool = True
    """Its TTFT is the one compared across buckets: a watch's first request of each tick
    (the cold short). Sent at a random moment (the schedule's jitter), it sees the server
    as it is; the tick's next requests follow it at once and find the queue it just
    waited through (and a long prompt's prefill would add its own spread)."""


@dataclass(frozen=True, slots=True)
class BucketCounts:
    """One bucket's requests as counted elsewhere (a store), without their TTFTs."""

    index: int
    requests: int
    errors: int
    tpot_p50_ms: float | None
    """The median TPOT of the bucket's successful requests."""


@dataclass(frozen=True, slots=True)
class Bucket:
    index: int
    start_s: float
    """Seconds into the cycle (or since the epoch, with no cycle) where it starts."""
    label: str
    requests: int
    errors: int
    ttft: Distribution | None
    """Of the compared requests (see :attr:`ClockPoint.compared`) that succeeded."""
    ttft_p95_ms: float | None
    tpot_p50_ms: float | None

    @property
    def error_rate(self) -> float | None:
        return None if self.requests == 0 else self.errors / self.requests


@dataclass(frozen=True, slots=True)
class Peak:
    """The peak buckets against the others."""

    ranges: tuple[str, ...]
    """Contiguous runs of peak buckets as time ranges, e.g. ``14:00–17:00 UTC``."""
    buckets: tuple[int, ...]
    peak_ttft_p50_ms: float
    off_peak_ttft_p50_ms: float
    ratio: float
    ratio_ci: tuple[float, float] | None
    p_value: float | None
    """The share of shuffles of the TTFTs across buckets whose picked peak stood at least
    as far above its rest: the chance of a peak this strong on a day without one."""
    peak_n: int
    off_peak_n: int
    significant: bool


@dataclass(frozen=True, slots=True)
class ClockReport:
    """A watch's requests by the clock: each bucket's counts and TTFTs, and the peak
    against the rest when one stands out."""

    cycle_s: float | None
    bucket_s: float
    buckets: tuple[Bucket, ...]
    peak: Peak | None
    """``None`` when no bucket stands out (or too few buckets have TTFTs)."""

    @property
    def pattern(self) -> bool:
        return self.peak is not None and self.peak.significant

    @property
    def verdict(self) -> str:
        peak = self.peak
        if peak is None or not peak.significant:
            return "no daily pattern" if self.cycle_s is not None else "no slow period"
        where = ", ".join(peak.ranges)
        return (
            f"{where}: TTFT p50 {peak.ratio:.1f}× off-peak ({p_text(peak.p_value)}): "
            "queueing at the provider's peak — schedule batch work off-peak"
        )


def p_text(p: float | None) -> str:
    if p is None:
        return "p not computed"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def clock_report(
    points: Iterable[ClockPoint],
    *,
    bucket_s: float,
    cycle_s: float | None = DAY_S,
    seed: int = 0,
) -> ClockReport:
    """Buckets of ``bucket_s`` over a ``cycle_s`` cycle (``None``: plain time) and the peak."""
    _check_spans(bucket_s, cycle_s)
    grouped: dict[int, list[ClockPoint]] = {}
    for point in points:
        grouped.setdefault(_bucket_index(point.at, bucket_s, cycle_s), []).append(point)
    counts = [
        BucketCounts(
            index=i,
            requests=len(group),
            errors=sum(1 for p in group if not p.ok),
            tpot_p50_ms=_p50(p.tpot_ms for p in group if p.ok),
        )
        for i, group in grouped.items()
    ]
    compared = {i: _compared_ttfts(group) for i, group in grouped.items()}
    return clock_report_of_buckets(counts, compared, bucket_s=bucket_s, cycle_s=cycle_s, seed=seed)


def clock_report_of_buckets(
    counts: Iterable[BucketCounts],
    ttfts: Mapping[int, Sequence[float] | npt.NDArray[np.float64]],
    *,
    bucket_s: float,
    cycle_s: float | None = DAY_S,
    seed: int = 0,
) -> ClockReport:
    """:func:`clock_report` of requests already counted per bucket: ``counts`` of every
    bucket with a request, ``ttfts`` the compared TTFTs of each (successful requests
    only), buckets numbered as :func:`clock_report` numbers them."""
    _check_spans(bucket_s, cycle_s)
    counted = {c.index: c for c in counts}
    if cycle_s is not None:
        indices = list(range(math.ceil(cycle_s / bucket_s)))
    elif counted:
        indices = list(range(min(counted), max(counted) + 1))
    else:
        indices = []
    compared = {i: np.asarray(ttfts.get(i, ()), dtype=np.float64) for i in indices}
    buckets = tuple(_bucket(i, counted.get(i), compared[i], bucket_s, cycle_s) for i in indices)
    peak = _peak(buckets, compared, bucket_s, cycle_s, seed)
    return ClockReport(cycle_s, bucket_s, buckets, peak)


def _check_spans(bucket_s: float, cycle_s: float | None) -> None:
    if not (bucket_s > 0 and math.isfinite(bucket_s)):
        raise ValueError(f"bucket_s must be a finite number > 0, got {bucket_s!r}")
    if cycle_s is not None and not (bucket_s <= cycle_s and math.isfinite(cycle_s)):
        raise ValueError(f"cycle_s must be finite and at least bucket_s, got {cycle_s!r}")


def _bucket_index(at: datetime, bucket_s: float, cycle_s: float | None) -> int:
    seconds = at.timestamp()
    if cycle_s is not None:
        seconds %= cycle_s
    return math.floor(seconds / bucket_s)


def _compared_ttfts(points: Sequence[ClockPoint]) -> list[float]:
    return [p.ttft_ms for p in points if p.compared and p.ok and p.ttft_ms is not None]


def _p50(values: Iterable[float | None]) -> float | None:
    summary = Distribution.of(values)
    return None if summary is None else summary.p50


def _p95(values: list[float]) -> float | None:
    if len(values) > 1:
        return quantile(values, 0.95)
    return values[0] if values else None


def _bucket(
    index: int,
    counts: BucketCounts | None,
    ttfts: npt.NDArray[np.float64],
    bucket_s: float,
    cycle_s: float | None,
) -> Bucket:
    return Bucket(
        index=index,
        start_s=index * bucket_s,
        label=_label(index * bucket_s, bucket_s, cycle_s),
        requests=0 if counts is None else counts.requests,
        errors=0 if counts is None else counts.errors,
        ttft=Distribution.of(ttfts),
        ttft_p95_ms=_p95(ttfts.tolist()),
        tpot_p50_ms=None if counts is None else counts.tpot_p50_ms,
    )


def _label(start_s: float, bucket_s: float, cycle_s: float | None) -> str:
    if cycle_s is None:
        start = datetime.fromtimestamp(start_s, UTC)
        if bucket_s >= DAY_S:
            return f"{start:%Y-%m-%d}"
        return f"{start:%Y-%m-%d} {start.strftime(_time_format(bucket_s))}"
    if cycle_s == DAY_S:
        return _clock_time(start_s, bucket_s)
    return f"{start_s:g} s"


def _time_format(bucket_s: float) -> str:
    """Minutes, or seconds too where buckets do not fall on whole minutes."""
    return "%H:%M" if bucket_s % 60 == 0 else "%H:%M:%S"


def _clock_time(seconds: float, bucket_s: float) -> str:
    seconds %= DAY_S
    day_start = datetime(1970, 1, 1, tzinfo=UTC)
    return (day_start + timedelta(seconds=round(seconds))).strftime(_time_format(bucket_s))


def range_label(first: int, last: int, bucket_s: float, cycle_s: float | None) -> str:
    """Buckets ``first`` to ``last`` (inclusive, in cycle order) as one time range."""
    start = first * bucket_s
    end = (last + 1) * bucket_s
    if cycle_s is None:
        a = datetime.fromtimestamp(start, UTC)
        b = a + timedelta(seconds=end - start)
        shown = _time_format(bucket_s)
        return f"{a:%Y-%m-%d} {a.strftime(shown)}–{b.strftime(shown)} UTC"
    if cycle_s == DAY_S:
        end_text = "24:00" if end % DAY_S == 0 else _clock_time(end, bucket_s)
        return f"{_clock_time(start, bucket_s)}–{end_text} UTC"
    end = end if end <= cycle_s else end - cycle_s
    return f"{start:g}–{end:g} s of the {cycle_s:g} s cycle"


def _runs(indices: Sequence[int], count: int, circular: bool) -> list[tuple[int, int]]:
    """Contiguous runs of sorted bucket indices; a cycle's last bucket touches its first."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][1] + 1 == i:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    if circular and len(runs) > 1 and runs[0][0] == 0 and runs[-1][1] == count - 1:
        first = runs.pop(0)
        runs[-1][1] = first[1]
    return [(a, b) for a, b in runs]


def pick_peak(medians: Mapping[int, float]) -> list[int]:
    """The peak buckets, sorted: of the ranked buckets' TTFT medians (by bucket index),
    those above the median of the medians by more than ``PEAK_MARGIN``; none with fewer
    than three buckets ranked, or when it would pick every one."""
    if len(medians) < 3:
        return []
    typical = statistics.median(medians.values())
    picked = sorted(i for i, m in medians.items() if m > typical * (1 + PEAK_MARGIN))
    return [] if len(picked) == len(medians) else picked


def _peak(
    buckets: Sequence[Bucket],
    compared: Mapping[int, npt.NDArray[np.float64]],
    bucket_s: float,
    cycle_s: float | None,
    seed: int,
) -> Peak | None:
    ranked = {b.index: b.ttft.p50 for b in buckets if b.ttft and b.ttft.n >= PEAK_MIN_BUCKET_TTFTS}
    peak_ids = pick_peak(ranked)
    if not peak_ids:
        return None
    peak_values = np.concatenate([compared[i] for i in peak_ids])
    off_values = np.concatenate([compared[i] for i in ranked if i not in peak_ids])
    peak_p50 = float(np.median(peak_values))
    off_p50 = float(np.median(off_values))
    interval = ratio_ci(peak_values, off_values, seed=seed)
    p = _selection_p([compared[i] for i in ranked], seed=seed)
    significant = (
        p is not None and p < ALPHA and interval is not None and interval[0] > PEAK_MIN_RATIO
    )
    runs = _runs(peak_ids, len(buckets), circular=cycle_s is not None)
    return Peak(
        ranges=tuple(range_label(a, b, bucket_s, cycle_s) for a, b in runs),
        buckets=tuple(peak_ids),
        peak_ttft_p50_ms=peak_p50,
        off_peak_ttft_p50_ms=off_p50,
        ratio=peak_p50 / off_p50 if off_p50 > 0 else math.inf,
        ratio_ci=interval,
        p_value=p,
        peak_n=int(peak_values.size),
        off_peak_n=int(off_values.size),
        significant=significant,
    )


_PERMUTATION_CHUNK = 250
"""Shuffles drawn at once: bounds the arrays of one step to a few megabytes."""


def _selection_p(groups: Sequence[npt.NDArray[np.float64]], *, seed: int) -> float:
    """How often a shuffle of the TTFTs across ``groups`` (the ranked buckets) gives a
    picked peak at least as far above its rest as the real one: the selection is made
    again in every shuffle, so the test does not reuse it. How far above is the picked
    buckets' mean rank over the rest's (the Mann–Whitney statistic, which reads every
    request where a ratio of medians reads two). A bucket keeps at most
    ``PEAK_PERMUTATION_VALUES`` of its TTFTs (drawn at random: under no peak they are
    exchangeable), the real statistic is read from the same values, and the p-value counts
    the real arrangement as one of the shuffles, so it is never 0."""
    rng = np.random.default_rng(seed)
    kept = [
        g if g.size <= PEAK_PERMUTATION_VALUES else rng.choice(g, PEAK_PERMUTATION_VALUES, False)
        for g in groups
    ]
    pooled = np.concatenate(kept)
    ranks = _ranks(pooled)
    sizes = [g.size for g in kept]
    layout = np.full((len(kept), max(sizes)), -1)
    start = 0
    for row, size in enumerate(sizes):
        layout[row, :size] = np.arange(start, start + size)
        start += size
    identity = np.arange(pooled.size)[np.newaxis, :]
    observed = _picked_rank_gap(pooled, ranks, identity, layout)[0]
    beaten = 0
    left = PEAK_PERMUTATIONS
    while left:
        draws = min(left, _PERMUTATION_CHUNK)
        order = np.argsort(rng.random((draws, pooled.size)), axis=1)
        gaps = _picked_rank_gap(pooled, ranks, order, layout)
        beaten += int(np.count_nonzero(gaps >= observed))
        left -= draws
    return (1 + beaten) / (1 + PEAK_PERMUTATIONS)


def _ranks(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Average ranks from 1, ties sharing theirs."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size)
    ranks[order] = np.arange(1, values.size + 1)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return np.asarray(sums[inverse] / counts[inverse], dtype=np.float64)


def _picked_rank_gap(
    values: npt.NDArray[np.float64],
    ranks: npt.NDArray[np.float64],
    orders: npt.NDArray[np.int_],
    layout: npt.NDArray[np.int_],
) -> npt.NDArray[np.float64]:
    """For each row of ``orders`` (the pooled TTFTs in some order, cut into buckets by
    ``layout``: each bucket's positions, ``-1`` past its end), the mean rank of the
    buckets the peak rule picks (by their medians) less that of the others; ``-inf``
    where it picks none or all."""
    cells = np.maximum(layout, 0)
    present = layout >= 0
    taken = orders[:, cells]
    medians = np.nanmedian(np.where(present, values[taken], np.nan), axis=2)
    typical = np.median(medians, axis=1, keepdims=True)
    picked = medians > typical * (1 + PEAK_MARGIN)
    chosen = picked.any(axis=1) & ~picked.all(axis=1)
    cell_ranks = np.where(present, ranks[taken], 0.0)
    inside = picked[:, :, None] & present
    outside = ~picked[:, :, None] & present
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = (cell_ranks * inside).sum(axis=(1, 2)) / inside.sum(axis=(1, 2)) - (
            cell_ranks * outside
        ).sum(axis=(1, 2)) / outside.sum(axis=(1, 2))
    return np.where(chosen, gap, -np.inf)
