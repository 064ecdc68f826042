"""How often each 95% interval latdoc prints holds the true value.

Each row is one interval, at one sample size, on one latency distribution whose truth
is known: the population quantity the interval claims to estimate (the ratio or the
difference of population medians, the median of a trial's mean, the pooled median of
the peak hours picked against that of the rest, the nearer vantage's margin as picked).
The row draws ``--reps`` seeded samples, asks the function the command calls for its
interval (``ratio_ci``, ``difference_ci``, ``bootstrap_ci`` of :mod:`latdoc.analysis.stats`,
on the values the command gives it) and counts how often it holds the truth: the
coverage, with its binomial standard error, the mean width, and whether it is within
the goal (93–97%). Where latdoc gives no interval (fewer values than the policy's
minimum) the row says so instead.

The distributions are latency-like: lognormal around a median with a log-sd σ of 0.05
(a steady decode) to 0.5 (a noisy first byte), and a heavy-tail mix in which a share of
requests meets a busy server and takes k× as long. The rows are :data:`CASES`, small
named :class:`Case` values, so one more row is one more line.
Run: ``make bench`` or ``.venv/bin/python bench/coverage.py [--reps 2000] [--seed 1]``.
"""

from __future__ import annotations

import argparse
import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from rich.console import Console
from rich.table import Table
from scipy import optimize, stats

from latdoc.analysis.stats import difference_ci, median_interval, ratio_ci
from latdoc.features.vantage.analysis import VantageRow, compare_vantages
from latdoc.features.verify.conversation.analysis import mean_saving_interval
from latdoc.features.verify.retry.analysis import p95_interval
from latdoc.features.watch.analysis import pick_peak

GOAL = (0.93, 0.97)
Array = npt.NDArray[np.float64]
Interval = tuple[float, float] | None


@dataclass(frozen=True)
class Latency:
    """Lognormal latencies around ``median_ms`` with log-sd ``sigma``; a ``slow_share`` of
    them meets a busy server and takes ``slow_factor`` × as long."""

    median_ms: float
    sigma: float
    slow_share: float = 0.0
    slow_factor: float = 1.0

    def draw(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> Array:
        values = self.median_ms * np.exp(self.sigma * rng.standard_normal(size))
        if self.slow_share:
            values = np.where(rng.random(size) < self.slow_share, values * self.slow_factor, values)
        return values

    def cdf(self, x: float) -> float:
        z = math.log(x / self.median_ms) / self.sigma
        fast = float(stats.norm.cdf(z))
        if not self.slow_share:
            return fast
        slow = float(stats.norm.cdf(z - math.log(self.slow_factor) / self.sigma))
        return (1 - self.slow_share) * fast + self.slow_share * slow

    @property
    def mean(self) -> float:
        lognormal = self.median_ms * math.exp(self.sigma**2 / 2)
        return lognormal * (1 - self.slow_share + self.slow_share * self.slow_factor)

    def quantile(self, q: float) -> float:
        low, high = self.median_ms / 100, self.median_ms * self.slow_factor * 100
        return float(optimize.brentq(lambda x: self.cdf(x) - q, low, high))

    @property
    def label(self) -> str:
        text = f"σ {self.sigma:g}"
        if self.slow_share:
            text += f", {self.slow_share:.0%} ×{self.slow_factor:g}"
        return text


def pooled_median(parts: Sequence[Latency]) -> float:
    """The median of equal shares of ``parts`` pooled (of one part, its own median)."""
    low = min(p.median_ms for p in parts) / 100
    high = max(p.median_ms * p.slow_factor for p in parts) * 100
    root = optimize.brentq(lambda x: sum(p.cdf(x) for p in parts) / len(parts) - 0.5, low, high)
    return float(root)


_SIMULATED: dict[str, float] = {}


def simulated_median(key: str, draw: Callable[[np.random.Generator], Array]) -> float:
    """The median of a quantity with no closed form (a trial's mean, a sum), from two
    million seeded draws (``draw``, once per ``key``): its own error is far below any
    interval's width here."""
    if key not in _SIMULATED:
        _SIMULATED[key] = float(np.median(draw(np.random.default_rng(20_000_000))))
    return _SIMULATED[key]


Replicate = Callable[[np.random.Generator], tuple[Interval, float]]
"""One replication: the interval latdoc prints for a fresh sample, and the truth."""


@dataclass(frozen=True)
class Case:
    interval: str
    n: str
    distribution: str
    replicate: Replicate


# --- The intervals, each as its command computes it ----------------------------------


def compare_ratio(a: Latency, b: Latency, n_a: int, n_b: int) -> Case:
    """``latdoc compare``'s A ÷ B of one metric of one group: ``ratio_ci(a, b)``."""

    def replicate(rng: np.random.Generator) -> tuple[Interval, float]:
        xs, ys = a.draw(rng, n_a), b.draw(rng, n_b)
        return ratio_ci(xs, ys), pooled_median([a]) / pooled_median([b])

    return Case("compare: ratio A ÷ B", f"{n_a} vs {n_b}", f"{a.label} vs {b.label}", replicate)


def compare_difference(a: Latency, b: Latency, n_a: int, n_b: int) -> Case:
    """``latdoc compare``'s B − A: ``difference_ci(b, a)``."""

    def replicate(rng: np.random.Generator) -> tuple[Interval, float]:
        xs, ys = a.draw(rng, n_a), b.draw(rng, n_b)
        return difference_ci(ys, xs), pooled_median([b]) - pooled_median([a])

    return Case("compare: B − A", f"{n_a} vs {n_b}", f"{a.label} vs {b.label}", replicate)


def verify_gain(a: Latency, b: Latency, trials: int, at_once: int) -> Case:
    """An experiment's headline by trial means (``compare_arms`` with ``TRIAL_MEAN``):
    each trial's mean of ``at_once`` requests sent together, and the difference B − A of
    the medians over trials. The truth is that of the trial mean's distribution."""

    def truth(arm: Latency) -> float:
        return simulated_median(
            f"trial mean {arm} ×{at_once}",
            lambda rng: arm.draw(rng, (2_000_000, at_once)).mean(axis=1),
        )

    def replicate(rng: np.random.Generator) -> tuple[Interval, float]:
        xs = a.draw(rng, (trials, at_once)).mean(axis=1)
        ys = b.draw(rng, (trials, at_once)).mean(axis=1)
        return difference_ci(ys, xs), truth(b) - truth(a)

    return Case(
        f"verify: gain B − A, trial means of {at_once}",
        f"{trials} vs {trials} trials",
        f"{a.label} vs {b.label}",
        replicate,
    )


def verify_until_precise(a: Latency, b: Latency, precision: float, most: int = 200) -> Case:
    """An experiment that stops as ``verify --precision`` does: one request per arm per
    block, from 10 trials on each arm, until the ratio's interval is within ± ``precision``
    of the ratio (``ratio_precision``) or ``most`` trials; its headline B − A then."""

    def replicate(rng: np.random.Generator) -> tuple[Interval, float]:
        xs, ys = a.draw(rng, most), b.draw(rng, most)
        n = 10
        while n < most:
            ci = ratio_ci(xs[:n], ys[:n])
            ratio = float(np.median(xs[:n]) / np.median(ys[:n]))
            if ci is not None and (ci[1] - ci[0]) / 2 / ratio <= precision:
                break
            n += 1
        return difference_ci(ys[:n], xs[:n]), pooled_median([b]) - pooled_median([a])

    return Case(
        f"verify: gain B − A, stopped at ±{precision:.0%}",
        f"10–{most} trials",
        f"{a.label} vs {b.label}",
        replicate,
    )


def keepalive_saving(reused: Latency, setup: Latency, n_new: int, n_reused: int) -> Case:
    """Keep-alive's saving: the first byte of requests on new connections (the reused
    one's wait plus a connection's setup) less that of reused ones, of one prompt length:
    ``difference_ci(new, reused)``."""

    def truth() -> float:
        new = simulated_median(
            f"new {reused} + {setup}",
            lambda rng: reused.draw(rng, 2_000_000) + setup.draw(rng, 2_000_000),
        )
        return new - pooled_median([reused])

    def replicate(rng: np.random.Generator) -> tuple[Interval, float]:
        new = reused.draw(rng, n_new) + setup.draw(rng, n_new)
        return difference_ci(new, reused.draw(rng, n_reused)), truth()

    return Case(
        "keep-alive: saving new − reused",
        f"{n_new} vs {n_reused}",
        f"first byte {reused.label}, setup {setup.label}",
        replicate,
    )


def keepalive_setup(setup: Latency, n: int) -> Case:
    """Keep-alive's gain where the server closes connections: the median setup every new
    connection paid, ``median_interval(setups)``."""

    def replicate(rng: np.random.Generator) -> tuple[Interval, float]:
        return median_interval(setup.draw(rng, n)), pooled_median([setup])

    return Case("keep-alive: setup a new connection pays", str(n), setup.label, replicate)


def watch_peak(base: Latency, factor: float, per_bucket: int, hours: int = 24) -> Case:
    """``report --watch``'s peak ÷ rest: hours 14–17 of ``hours`` are ``factor`` × slower;
    the peak buckets are picked by their medians as the report picks them
    (:func:`~latdoc.features.watch.analysis.pick_peak`), and the truth is the pooled median of the
    hours picked over that of the rest. A draw where no peak is picked prints nothing."""
    peak = Latency(base.median_ms * factor, base.sigma, base.slow_share, base.slow_factor)
    kinds = [peak if 14 <= h < 18 else base for h in range(hours)]

    @functools.cache
    def truth(picked: tuple[int, ...]) -> float:
        inside = [kinds[h] for h in picked]
        outside = [kinds[h] for h in range(hours) if h not in picked]
        return pooled_median(inside) / pooled_median(outside)

    def replicate(rng: np.random.Generator) -> tuple[Interval, float]:
        values = [kind.draw(rng, per_bucket) for kind in kinds]
        picked = pick_peak({h: float(np.median(v)) for h, v in enumerate(values)})
        if not picked:
            return None, math.nan
        inside = np.concatenate([values[h] for h in picked])
        outside = np.concatenate([values[h] for h in range(hours) if h not in picked])
        return ratio_ci(inside, outside), truth(tuple(picked))

    return Case(
        "watch: peak ÷ rest",
        f"{hours} hours × {per_bucket}",
        f"{base.label}, peak ×{factor:g}",
        replicate,
    )


def vantage_margin(near: Latency, far: Latency, n: int) -> Case:
    """``latdoc vantage``'s margin: the runner-up's median round trip less the nearest's,
    each picked by their sample medians (``compare_vantages``); the truth is that of the
    two as picked."""

    def row(name: str, rtts: Array) -> VantageRow:
        return VantageRow(name, None, None, n, 0, None, None, None, float(np.median(rtts)),
                          None, rtt_samples=tuple(rtts.tolist()))  # fmt: skip

    truths = {"near": pooled_median([near]), "far": pooled_median([far])}

    def replicate(rng: np.random.Generator) -> tuple[Interval, float]:
        result = compare_vantages([row("near", near.draw(rng, n)), row("far", far.draw(rng, n))])
        assert result.nearest is not None and result.runner_up is not None
        return result.margin_ms, truths[result.runner_up] - truths[result.nearest]

    return Case("vantage: margin", f"{n} vs {n}", f"{near.label} vs {far.label}", replicate)


def conversation_saving(keep: Latency, strategy: Latency, turns: int) -> Case:
    """``verify --remedy conversation``'s saving of a strategy: the mean over turns of
    keeping everything's TTFT less the strategy's, paired by turn."""

    def replicate(rng: np.random.Generator) -> tuple[Interval, float]:
        savings = keep.draw(rng, turns) - strategy.draw(rng, turns)
        return mean_saving_interval(savings.tolist()), keep.mean - strategy.mean

    return Case(
        "conversation: mean saving per turn",
        f"{turns} turns",
        f"{keep.label} vs {strategy.label}",
        replicate,
    )


def retry_p95(latency: Latency, trials: int) -> Case:
    """``verify --remedy retry``'s end-to-end p95 of an arm's trials."""

    def replicate(rng: np.random.Generator) -> tuple[Interval, float]:
        return p95_interval(latency.draw(rng, trials)), latency.quantile(0.95)

    return Case("retry: end-to-end p95", f"{trials} trials", latency.label, replicate)


# --- The rows --------------------------------------------------------------------------

STEADY = Latency(100, 0.05)
TYPICAL = Latency(100, 0.2)
NOISY = Latency(100, 0.5)
BUSY = Latency(100, 0.2, 0.2, 3.0)
"""A fifth of requests meets a busy server and takes 3× as long."""
HALF_BUSY = Latency(100, 0.2, 0.4, 3.0)
"""Two in five do: the median sits in the gap between the two."""


def faster(latency: Latency, by: float) -> Latency:
    return Latency(latency.median_ms * by, latency.sigma, latency.slow_share, latency.slow_factor)


def _compare_rows() -> list[Case]:
    rows: list[Case] = []
    for n in (3, 5, 10, 20, 50):
        rows.append(compare_ratio(TYPICAL, faster(TYPICAL, 0.8), n, n))
    for n in (5, 10, 20):
        rows += [
            compare_ratio(STEADY, faster(STEADY, 0.9), n, n),
            compare_ratio(NOISY, faster(NOISY, 0.8), n, n),
            compare_ratio(STEADY, faster(NOISY, 0.9), n, n),
            compare_ratio(BUSY, faster(TYPICAL, 0.9), n, n),
            compare_ratio(HALF_BUSY, faster(TYPICAL, 0.9), n, n),
        ]
    for n in (3, 5, 7, 10, 20, 50):
        rows.append(compare_difference(TYPICAL, faster(TYPICAL, 0.8), n, n))
    for n in (7, 20):
        rows += [
            compare_difference(NOISY, faster(STEADY, 0.9), n, n),
            compare_difference(BUSY, BUSY, n, n),
        ]
    rows += [
        compare_ratio(Latency(100, 0.1, 0.5, 5.0), Latency(100, 0.1), 20, 20),
        compare_ratio(TYPICAL, faster(BUSY, 0.9), 6, 20),
        compare_difference(NOISY, faster(STEADY, 0.9), 5, 50),
    ]
    return rows


def _verify_rows() -> list[Case]:
    return [
        verify_gain(TYPICAL, faster(TYPICAL, 0.8), 10, 4),
        verify_gain(BUSY, faster(BUSY, 0.8), 10, 4),
        verify_gain(BUSY, faster(BUSY, 0.8), 20, 4),
        verify_gain(NOISY, faster(NOISY, 0.8), 50, 4),
        verify_gain(HALF_BUSY, faster(TYPICAL, 0.8), 20, 1),
        verify_until_precise(TYPICAL, faster(TYPICAL, 0.8), 0.10),
    ]


def _network_rows() -> list[Case]:
    setup = Latency(60, 0.3)
    return [
        keepalive_saving(TYPICAL, setup, 3, 3),
        keepalive_saving(TYPICAL, setup, 5, 5),
        keepalive_saving(NOISY, setup, 5, 5),
        keepalive_saving(BUSY, setup, 10, 10),
        keepalive_setup(setup, 5),
        keepalive_setup(setup, 7),
        keepalive_setup(Latency(60, 0.3, 0.1, 5.0), 12),
        vantage_margin(Latency(20, 0.1), Latency(30, 0.1), 5),
        vantage_margin(Latency(20, 0.2), Latency(22, 0.2), 10),
        vantage_margin(Latency(20, 0.1, 0.1, 10.0), Latency(25, 0.1, 0.1, 10.0), 20),
        vantage_margin(Latency(20, 0.2), Latency(20, 0.2), 10),
    ]


def _verify_other_rows() -> list[Case]:
    keep, shorter = Latency(300, 0.3), Latency(200, 0.3)
    return [
        conversation_saving(keep, shorter, 5),
        conversation_saving(keep, shorter, 8),
        conversation_saving(keep, shorter, 20),
        conversation_saving(Latency(300, 0.5), Latency(200, 0.2), 8),
        conversation_saving(Latency(300, 0.2, 0.2, 3.0), Latency(250, 0.2, 0.2, 3.0), 12),
        conversation_saving(Latency(300, 0.2, 0.1, 5.0), Latency(250, 0.2), 10),
        retry_p95(Latency(500, 0.3), 40),
        retry_p95(Latency(500, 0.3), 72),
        retry_p95(Latency(500, 0.3), 100),
        retry_p95(Latency(500, 0.2, 0.2, 3.0), 200),
    ]


def _watch_rows() -> list[Case]:
    return [
        watch_peak(Latency(100, 0.3), 2.0, 6),
        watch_peak(Latency(100, 0.3), 1.5, 12),
        watch_peak(BUSY, 2.0, 30),
        watch_peak(Latency(100, 0.3), 2.0, 400),
    ]


CASES: tuple[Case, ...] = (
    *_compare_rows(),
    *_verify_rows(),
    *_verify_other_rows(),
    *_network_rows(),
    *_watch_rows(),
)


# --- Counting ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Coverage:
    case: Case
    reps: int
    given: int
    covered: int
    mean_width: float
    seconds: float

    @property
    def rate(self) -> float:
        return self.covered / self.given if self.given else math.nan

    @property
    def standard_error(self) -> float:
        return math.sqrt(self.rate * (1 - self.rate) / self.given) if self.given else math.nan

    @property
    def met(self) -> bool | None:
        """Within :data:`GOAL`; ``None`` when no interval was given."""
        return GOAL[0] <= self.rate <= GOAL[1] if self.given else None

    @property
    def within_noise(self) -> bool:
        """Outside the goal by less than two standard errors: another seed may put it in."""
        return GOAL[0] - 2 * self.standard_error <= self.rate <= GOAL[1] + 2 * self.standard_error


def measure(case: Case, reps: int, seed: int) -> Coverage:
    """``reps`` seeded replications of ``case``."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    given = covered = 0
    widths: list[float] = []
    for _ in range(reps):
        interval, truth = case.replicate(rng)
        if interval is None:
            continue
        given += 1
        covered += interval[0] <= truth <= interval[1]
        widths.append(interval[1] - interval[0])
    return Coverage(case, reps, given, covered, float(np.mean(widths)) if widths else math.nan,
                    time.perf_counter() - start)  # fmt: skip


def table(results: Sequence[Coverage]) -> Table:
    out = Table(title=f"coverage of latdoc's 95% intervals (goal {GOAL[0]:.0%}–{GOAL[1]:.0%})")
    for name, justify in (("interval", "left"), ("n", "left"), ("distribution", "left"),
                          ("given", "right"), ("coverage", "right"), ("± se", "right"),
                          ("mean width", "right"), ("goal", "left")):  # fmt: skip
        out.add_column(name, justify=justify)
    for r in results:
        c = r.case
        if not r.given:
            out.add_row(c.interval, c.n, c.distribution, f"0/{r.reps}", "—", "", "",
                        "[dim]no interval printed[/]")  # fmt: skip
            continue
        mark = "[green]met[/]" if r.met else "[red]not met[/]"
        if not r.met and r.within_noise:
            mark += " (within 2 se)"
        given = "all" if r.given == r.reps else f"{r.given}/{r.reps}"
        out.add_row(c.interval, c.n, c.distribution, given, f"{r.rate:.1%}",
                    f"{r.standard_error:.1%}", f"{r.mean_width:.3g}", mark)  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000, help="replications per row")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="", help="rows whose interval starts with this")
    args = parser.parse_args()
    console = Console(width=160)
    start = time.perf_counter()
    results = [
        measure(case, args.reps, args.seed * 1000 + i)
        for i, case in enumerate(CASES)
        if case.interval.startswith(args.only)
    ]
    console.print(table(results))
    given = [r for r in results if r.given]
    met = sum(1 for r in given if r.met)
    console.print(
        f"{met} of {len(given)} rows with an interval within the goal; "
        f"{len(results) - len(given)} rows print none (below the policy's minimum n); "
        f"{args.reps} replications a row, {time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
