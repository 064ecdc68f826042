"""A whole load sweep read across its levels (:class:`LoadAnalysis`): each level's
numbers, the knee where requests start to wait for the server, the throughput
plateau, and the peak.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from latdoc.analysis.policy import PLATEAU_GROWTH, queues_under_load
from latdoc.features.load.analysis._level import (
    LevelStats,
    LevelWindow,
    Percentiles,
    Slo,
    level_stats,
)
from latdoc.model import Price
from latdoc.records import Sample, Step


@dataclass(frozen=True, slots=True)
class LoadAnalysis:
    """A load sweep read level by level: each level's statistics, the knee, the plateau,
    the peak throughput and the objectives they were judged by."""

    levels: tuple[LevelStats, ...]
    knee: LevelStats | None
    """The first level whose TTFT p50 queues against the lowest level's."""
    plateau: LevelStats | None
    """The first level whose requests/s grew less than ``PLATEAU_GROWTH``."""
    peak_requests_per_s: float | None
    slo: Slo

    @property
    def unloaded_ttft_ms(self) -> float | None:
        """The knee's reference (:func:`knee_base`): the sentence and the rule read one."""
        base = knee_base(self.levels)
        return None if base is None else base[1].p50


def analyse_load(
    windows: Sequence[LevelWindow],
    samples: Sequence[Sample],
    slo: Slo | None = None,
    price: Price | None = None,
) -> LoadAnalysis:
    """Every level's numbers (its cost at ``price``), then the knee and the plateau
    across them."""
    slo = slo or Slo()
    levels = []
    for w in windows:
        mine = [s for s in samples if s.step == w.step and s.concurrency == w.sample_concurrency]
        levels.append(level_stats(w, mine, slo, price))
    return LoadAnalysis(
        levels=tuple(levels),
        knee=find_knee(levels),
        plateau=find_plateau(levels),
        peak_requests_per_s=max((lv.requests_per_s for lv in levels), default=None),
        slo=slo,
    )


def windows_kept(samples: Sequence[Sample], rates: Sequence[float] = ()) -> list[LevelWindow]:
    """The levels of a sweep that kept no record of them (one still running, or one whose
    process was killed), read from its requests: a level per step and concurrency, in the
    order each was first sent, from its first request's start to its last one's end;
    ``rates`` are the sweep's asked arrival rates, level by level. The last level may
    still be running: it is partial, out of the knee and the plateau until it ends."""
    spans: dict[tuple[Step, int], tuple[int, int]] = {}
    for sample in samples:
        if sample.step not in (Step.LOAD, Step.ARRIVALS):
            continue
        t = sample.trace
        end = t.t0_ns + (t.done_ns or 0)
        key = (sample.step, sample.concurrency)
        first, last = spans.get(key, (t.t0_ns, end))
        spans[key] = (min(first, t.t0_ns), max(last, end))
    windows = []
    for number, ((step, concurrency), (start, end)) in enumerate(spans.items(), 1):
        if step is Step.LOAD:
            windows.append(LevelWindow(number, concurrency, None, start, end))
        elif 0 < concurrency <= len(rates):
            rate = float(rates[concurrency - 1])
            windows.append(LevelWindow(concurrency, None, rate, start, end))
    if windows:
        windows[-1] = replace(windows[-1], partial=True)
    return windows


def _measured(levels: Sequence[LevelStats]) -> list[tuple[LevelStats, Percentiles]]:
    """The levels the knee reads: measured server-side TTFT, not cut short."""
    return [
        (lv, p)
        for lv in levels
        if (p := lv.server_side_ttft_ms) is not None and not lv.window.partial
    ]


def knee_base(levels: Sequence[LevelStats]) -> tuple[LevelStats, Percentiles] | None:
    """The lowest level the knee reads, and its server-side TTFT: the knee's reference.
    A lowest level cut short is not it (its sentence once read it while the rule did not)."""
    measured = _measured(levels)
    return measured[0] if measured else None


def find_knee(
    levels: Sequence[LevelStats], quantile: Literal["p50", "p95", "p99"] = "p50"
) -> LevelStats | None:
    """The first level whose server-side TTFT ``quantile`` (the p50: the knee) queues
    against :func:`knee_base`'s same quantile
    (:func:`~latdoc.analysis.policy.queues_under_load`); a level cut short is never the
    knee."""
    measured = _measured(levels)
    if len(measured) < 2:
        return None
    base = getattr(measured[0][1], quantile)
    for lv, p in measured[1:]:
        value = getattr(p, quantile)
        if base > 0 and queues_under_load(value / base, value - base):
            return lv
    return None


def find_tail_knee(levels: Sequence[LevelStats]) -> LevelStats | None:
    """The first level whose server-side TTFT p95 queues against the lowest level's, by
    the knee's rule: a few requests wait for the server there while the median may not
    yet (one in seven, at one stream past the slots); the page's plot draws that p95."""
    return find_knee(levels, "p95")


def find_plateau(levels: Sequence[LevelStats]) -> LevelStats | None:
    whole = [lv for lv in levels if not lv.window.partial]
    for previous, lv in itertools.pairwise(whole):
        if previous.requests_per_s > 0 and lv.requests_per_s < previous.requests_per_s * (
            1 + PLATEAU_GROWTH
        ):
            return lv
    return None
