"""The most load that meets an SLO: ``latdoc load --find-max --slo ttft_p95=2s,tpot_p50=80ms``.

Levels are probed one at a time: closed-loop streams doubling from 1 (or, with
``--rate R``, open-loop arrival rates doubling from R) until a level fails, then
bisecting between the highest level that passed and the lowest that failed until they
are adjacent (streams one apart; rates within :data:`RATE_PRECISION`). By rate, a level
that could not send at its rate (less than :data:`OVER_SATURATION` under it: the
endpoint held requests open until ``--max-in-flight`` ran out) is over-saturated and
fails. A level passes when every objective's quantile lies
below its limit and fails when one lies above it, each read from the quantile's 95%
interval (:func:`~latdoc.analysis.stats.quantile_interval`); while an interval still
holds its limit the level runs another ``--duration-per-level`` on (at most
:data:`MAX_ROUNDS` in all), and a level still undecided then is judged by its point
estimate and said to be. A level whose failed share passes ``--max-error-rate`` fails.

The answer is the highest level that passed, beside the lowest that failed (the
capacity lies between them), with the knee of the levels probed and the kind of slow
that broke the SLO first at the failing level: ``errors``; ``queueing`` when the time
to first token broke it under load but met it at one stream; ``prefill`` when it broke
it at one stream already; ``decode`` when the time per output token did.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from latdoc.errors import UsageError
from latdoc.features.load.analysis import (
    MAX_ROUNDS,
    OVER_SATURATION,
    FindMax,
    LevelWindow,
    Objective,
    Probe,
    Reading,
    busiest,
    objective,
    read_level,
)
from latdoc.features.load.send.sweep import LoadPlan, _Sweep, too_many_failed, within_time_budget
from latdoc.i18n import N_
from latdoc.records import RequestTrace, Sample, StepNote
from latdoc.workload import Budget, budget_for

RATE_PRECISION = 0.10
"""By rate: the search stops when the lowest failing rate is within this share of the
highest passing one."""
DEFAULT_LIMIT = 256
"""The most streams the search grows to."""
RATE_REACH = 2**10
"""By rate: the highest rate the search grows to, as a multiple of the starting rate."""


@dataclass(frozen=True)
class FindMaxAsk:
    """``--find-max``: the quantiles each level must meet, and how far the search grows."""

    objectives: tuple[Objective, ...]
    limit: float | None = None
    """The most streams to try (default :data:`DEFAULT_LIMIT`), or by rate the highest
    rate (default :data:`RATE_REACH` × ``start_rate``)."""
    start_rate: float | None = None
    """By rate: the first rate tried; ``None``: by streams, from 1."""

    def __post_init__(self) -> None:
        if not self.objectives:
            raise UsageError(
                N_("--find-max needs --slo with quantiles, e.g. ttft_p95=2s,tpot_p50=80ms")
            )

    @classmethod
    def asked(
        cls,
        find_max: bool,
        objectives: tuple[Objective, ...],
        limit: float | None = None,
        rates: Sequence[float] = (),
    ) -> FindMaxAsk | None:
        """The search ``find_max`` asks for, if any, from the first of ``rates`` when
        given; quantiles asked without the search are a :class:`UsageError` (goodput
        takes limits, not quantiles)."""
        if find_max:
            return cls(objectives, limit, rates[0] if rates else None)
        if objectives:
            raise UsageError(
                N_(
                    "--slo's quantiles (ttft_p95=…) are for --find-max; goodput takes ttft=… and "
                    "tpot=…"
                )
            )
        return None

    @property
    def reach(self) -> float:
        """The most streams, or the highest rate, the search tries."""
        if self.limit is not None:
            return float(self.limit)
        if self.start_rate is not None:
            return float(self.start_rate * RATE_REACH)
        return float(DEFAULT_LIMIT)


class LevelEnd(Protocol):
    """How a level's round ended."""

    @property
    def too_many_errors(self) -> bool: ...
    @property
    def reason(self) -> str | None: ...


class Levels(Protocol):
    """What the search sends its levels through: generated requests (the sweep's closed
    and open loops), or a replayed conversation's or agent's sessions, judged on their
    user turns."""

    budget: Budget
    on_sample: Callable[[Sample], None]
    on_level: Callable[[LevelWindow], None]

    @property
    def on_turns(self) -> bool:
        """Its levels are judged on their user turns, not on each request."""
        ...

    async def closed(self, number: int, streams: int, seconds: float) -> LevelEnd: ...

    def read(
        self, objectives: Sequence[Objective], traces: Sequence[RequestTrace]
    ) -> tuple[Reading, ...]:
        """The level's objectives read over what it sent."""
        ...


class _Generated:
    """The sweep's own requests as the search's levels, each request judged."""

    on_turns = False

    def __init__(self, sweep: _Sweep) -> None:
        self.sweep = sweep
        self.budget = sweep.budget

    @property
    def on_sample(self) -> Callable[[Sample], None]:
        return self.sweep.on_sample

    @on_sample.setter
    def on_sample(self, hook: Callable[[Sample], None]) -> None:
        self.sweep.on_sample = hook

    @property
    def on_level(self) -> Callable[[LevelWindow], None]:
        return self.sweep.on_level

    @on_level.setter
    def on_level(self, hook: Callable[[LevelWindow], None]) -> None:
        self.sweep.on_level = hook

    async def closed(self, number: int, streams: int, seconds: float) -> LevelEnd:
        return await self.sweep.closed(number, streams, seconds)

    async def open(self, number: int, rate: float, seconds: float) -> LevelEnd:
        return await self.sweep.open(number, rate, seconds)

    def read(
        self, objectives: Sequence[Objective], traces: Sequence[RequestTrace]
    ) -> tuple[Reading, ...]:
        return read_level(objectives, traces)


def _judged(readings: Sequence[Reading]) -> tuple[bool, bool]:
    """(passed, decided): any objective failing fails the level."""
    if any(r.verdict == "fail" for r in readings):
        return False, True
    if all(r.verdict == "pass" for r in readings):
        return True, True
    by_point = all(r.value_ms is not None and r.value_ms <= r.objective.limit_ms for r in readings)
    return by_point, False


def _broke(first: Probe, probes: Sequence[Probe]) -> str:
    if first.too_many_errors:
        return "errors"
    if first.over_saturated:
        return "queueing"
    failing = [r for r in first.readings if r.verdict != "pass" and r.value_ms is not None
               and r.value_ms > r.objective.limit_ms]  # fmt: skip
    if any(r.objective.metric == "tpot" for r in failing) and not any(
        r.objective.metric in ("ttft", "e2e") for r in failing
    ):
        return "decode"
    lowest = probes[0]
    if first is lowest:
        return "prefill"
    return "queueing"


class _Prober:
    """Sends one level at a time through the sweep, judges it, and keeps every probe by
    the level it sent (streams, or a rate)."""

    def __init__(
        self,
        plan: LoadPlan,
        objectives: Sequence[Objective],
        sweep: Levels,
        on_window: Callable[[LevelWindow], None],
        by_rate: bool,
    ) -> None:
        self.plan = plan
        self.objectives = objectives
        self.sweep = sweep
        self.on_window = on_window
        self.by_rate = by_rate
        self.probes: dict[float, Probe] = {}
        self.number = 0

    async def probe(self, value: float) -> Probe:
        """One level at ``value``, in rounds until its verdict is decided."""
        self.number += 1
        number, sweep = self.number, self.sweep
        traces: list[RequestTrace] = []
        windows: list[LevelWindow] = []
        keep = sweep.on_sample

        def mine(sample: Sample) -> None:
            traces.append(sample.trace)
            keep(sample)

        sweep.on_sample = mine
        sweep.on_level = windows.append
        rounds = 0
        readings: tuple[Reading, ...] = ()
        passed = decided = errors = False
        achieved: float | None = None
        try:
            for rounds in range(1, MAX_ROUNDS + 1):  # noqa: B007 (read after the loop)
                too_many, stopped, achieved = await self._round(number, value, traces, windows)
                failed = sum(1 for t in traces if not t.ok)
                errors = too_many or too_many_failed(len(traces), failed, self.plan.max_error_rate)
                readings = sweep.read(self.objectives, traces)
                passed, decided = _judged(readings)
                saturated = achieved is not None and achieved < value * (1 - OVER_SATURATION)
                if errors or saturated:
                    passed, decided = False, True
                if decided or stopped:
                    break
        finally:
            sweep.on_sample = keep
            if windows:
                self.on_window(_merged(windows, number, value, self.by_rate))
        result = Probe(value, rounds, len(traces), sum(1 for t in traces if not t.ok),
                       readings, passed, decided, errors, achieved)  # fmt: skip
        self.probes[value] = result
        return result

    async def _round(
        self,
        number: int,
        value: float,
        traces: Sequence[RequestTrace],
        windows: Sequence[LevelWindow],
    ) -> tuple[bool, bool, float | None]:
        """One round of the level: whether it failed too many requests, whether it stopped
        early, and by rate the rate it achieved against its scheduled arrivals."""
        seconds = self.plan.duration_per_level
        achieved: float | None = None
        level: LevelEnd
        if self.by_rate:
            assert isinstance(self.sweep, _Generated)  # by rate only with generated requests
            level = await self.sweep.open(number, value, seconds)
            # Against the arrivals its schedule drew, not the window's length: a
            # Poisson count varies by its square root, a pace kept or not does not.
            scheduled = sum(w.scheduled or 0 for w in windows)
            achieved = value * len(traces) / scheduled if scheduled else None
        else:
            level = await self.sweep.closed(number, int(value), seconds)
        return level.too_many_errors, level.reason is not None, achieved


async def search(
    plan: LoadPlan,
    objectives: Sequence[Objective],
    sweep: Levels,
    limit: float,
    on_window: Callable[[LevelWindow], None],
    start_rate: float | None = None,
) -> FindMax:
    """Double from the first level (1 stream, or ``start_rate``) until one fails, then
    bisect; every level judged as the module says."""
    by_rate = start_rate is not None
    prober = _Prober(plan, objectives, sweep, on_window, by_rate)
    probe, probes = prober.probe, prober.probes

    def adjacent(low: float, high: float) -> bool:
        return high <= low * (1 + RATE_PRECISION) if by_rate else high - low <= 1

    def middle(low: float, high: float) -> float:
        return float(f"{(low + high) / 2:.3g}") if by_rate else float((int(low) + int(high)) // 2)

    best: float | None = None
    failed_at: float | None = None
    value = start_rate if start_rate is not None else 1.0
    while value <= limit and sweep.budget.requests_left >= 1:
        if (await probe(value)).passed:
            best = value
            value *= 2
        else:
            failed_at = value
            break
    if best is not None and failed_at is None and value > limit and best < limit:
        if (await probe(limit)).passed:
            best = limit
        else:
            failed_at = limit
    while (best is not None and failed_at is not None and not adjacent(best, failed_at)
           and sweep.budget.requests_left >= 1):  # fmt: skip
        mid = middle(best, failed_at)
        if mid in probes:
            break
        if (await probe(mid)).passed:
            best = mid
        else:
            failed_at = mid
    ordered = [probes[v] for v in sorted(probes)]
    first = next((p for p in ordered if not p.passed), None)
    broke = None if first is None else _broke(first, ordered)
    return FindMax(tuple(objectives), tuple(probes.values()), best, failed_at, broke, limit,
                   by_rate, sweep.on_turns)  # fmt: skip


async def searched(
    plan: LoadPlan,
    objectives: Sequence[Objective],
    levels: Levels,
    limit: float,
    on_level: Callable[[LevelWindow], None],
    on_result: Callable[[FindMax], None],
    note: Callable[[str], None],
    start_rate: float | None = None,
) -> None:
    """:func:`search` within the plan's time budget, each level's window handed on in the
    order of its load (the knee reads them so), the answer to ``on_result``."""
    windows: list[LevelWindow] = []

    async def run() -> None:
        try:
            result = await search(plan, objectives, levels, limit, windows.append, start_rate)
        finally:
            for w in sorted(windows, key=lambda w: w.concurrency or w.rate or 0):
                on_level(w)
        on_result(result)

    await within_time_budget(levels.budget.seconds_left, run(), note)


def _merged(
    windows: Sequence[LevelWindow], number: int, value: float, by_rate: bool
) -> LevelWindow:
    """A level's rounds as one window."""
    start, end = windows[0].start_ns, windows[-1].end_ns
    partial = any(w.partial for w in windows)
    client = busiest(w.client for w in windows)
    if not by_rate:
        return LevelWindow(number, int(value), None, start, end, partial=partial, client=client)
    scheduled = sum(w.scheduled or 0 for w in windows)
    lates = [w.late_ms_p50 for w in windows if w.late_ms_p50 is not None]
    late = max(lates) if lates else None
    return LevelWindow(number, None, value, start, end, scheduled, late,
                       unsent=sum(w.unsent for w in windows), partial=partial,
                       client=client)  # fmt: skip


def find_max_sweep(
    plan: LoadPlan,
    objectives: Sequence[Objective],
    limit: float,
    on_progress: Callable[[str, int, int], None] | None,
    on_result: Callable[[FindMax], None],
    start_rate: float | None = None,
) -> Callable[
    [Callable[[Sample], None], Callable[[LevelWindow], None], Callable[[StepNote], None]],
    Coroutine[Any, Any, list[StepNote]],
]:
    """The search as a sweep :func:`~latdoc.features.load.run.load_endpoint` runs; its
    answer reaches ``on_result``, which the report leads with."""

    async def sweep(
        keep: Callable[[Sample], None],
        on_level: Callable[[LevelWindow], None],
        on_note: Callable[[StepNote], None],
    ) -> list[StepNote]:
        budget = budget_for(plan)
        runner = _Sweep(plan, budget, keep, on_level, on_progress, on_note)
        await searched(
            plan, objectives, _Generated(runner), limit, on_level, on_result, runner.note,
            start_rate,
        )  # fmt: skip
        return runner.notes

    return sweep


__all__ = [
    "DEFAULT_LIMIT",
    "RATE_REACH",
    "FindMax",
    "FindMaxAsk",
    "LevelEnd",
    "Levels",
    "Objective",
    "find_max_sweep",
    "objective",
    "search",
    "searched",
]
