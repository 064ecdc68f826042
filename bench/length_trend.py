"""Does the length rule name a growth behind a busy server, and keep quiet on a flat curve?

Two parts.

1. **The candidates, by simulation** (no sockets): a diagnosis's length curve drawn many
   seeded times (seven to nine requests alone at 128 tokens, one at 512, 2K, 8K and 32K,
   the 2K reference asked twice half of the time, at five lengths, at four and at
   three), each TTFT the curve times a log-normal jitter plus, for 30% of the
   requests, a busy server's wait (only ever added). Each candidate "beyond the
   jitter" test says how often it fires on the new user's endpoint (prefill 0.35 ms a
   token, 45 ms base: 129× from 128 to 32K tokens), on issue 17's (10× at 2K, +1 s
   busy) and on flat curves (log-normal, busy):

   - ``t test 2K``: the one latdoc had, a one-sided t test of the 128- and 2K-token log
     medians with the jitter pooled from the lengths asked twice;
   - ``pairs``: a one-sided Kendall (Jonckheere) count of every pair of requests of two
     lengths, by permutation;
   - ``faster half``: the same count on each length's faster half, by permutation;
   - ``fastest``: Kendall's test of each length's fastest request against its length;
   - ``log ranks``: TTFT ranks against the log of the prompt length, by permutation:
     :func:`latdoc.analysis.kinds.input_length.trend_p`, the rule's.

2. **The new user's endpoint on the wire**: the lab (:mod:`latdoc.lab.sim`) serving
   that endpoint — prefill 45 ms + 0.35 ms a token, decode 70 ms a token, one slot
   that a background user holds through 30% of every 10 s (3 s of each, in holds of
   2 s on average), so a request that arrives then waits for the hold to end —
   measured by the real ``measure_steps`` over loopback and
   diagnosed by ``build_diagnosis``, once per seed. It prints how many runs named
   input length (primary or contributing) and each run's trend p and lengths.

Run: ``.venv/bin/python bench/length_trend.py [--reps 1000] [--seeds 10] [--jobs 4]``.
"""

from __future__ import annotations

import argparse
import asyncio
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import numpy.typing as npt
from rich.console import Console
from rich.table import Table
from scipy import stats

from false_positives import LENGTHS, NEW_USER, SHAPES, Curve, Shape
from latdoc import DiagnosisPlan, Endpoint, Kind, RunContext, build_diagnosis, measure_steps
from latdoc.analysis.kinds.input_length import trend_p
from latdoc.analysis.length import jitter, length_points
from latdoc.analysis.policy import ALPHA
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.model import LengthPoint

Array = npt.NDArray[np.float64]
PERMUTATIONS = 999

LAB_LATENCY = LatencyModel(
    prefill_base_ms=45.0, prefill_ms_per_token=0.35, decode_ms_per_token=70.0
)
"""The new user's endpoint: TTFT ~90 ms at 128 tokens, ~11.5 s at 32K, decode 70 ms."""
BUSY_PROFILE = (0.0,) * 9 + (1.0,)
"""Busy through three tenths of the day: a request that arrives then waits."""
BUSY_DAY_S = 10.0
BUSY_MS = 2000.0


def lab_config(seed: int) -> LabConfig:
    """The endpoint with its busy server: one slot that a background user holds through
    3 s of every 10 (in holds of 2 s on average), and leaves alone the rest of the time.
    A busy share of the slot's time instead (a user who holds it 30% of the time,
    whenever) queues behind each of the run's long requests and takes the slot at its
    end, so half the run's requests, not 30%, met it."""
    return LabConfig(
        latency=LAB_LATENCY,
        slots=1,
        load_profile=BUSY_PROFILE,
        day_seconds=BUSY_DAY_S,
        background_request_ms=BUSY_MS,
        seed=seed,
    )


# --- the candidates ------------------------------------------------------------------


def _groups(points: Sequence[LengthPoint]) -> tuple[Array, Array]:
    x = np.concatenate([np.full(len(p.values_ms), float(p.prompt_tokens)) for p in points])
    y = np.concatenate([np.asarray(p.values_ms, dtype=float) for p in points])
    return x, y


def t_test_2k(points: Sequence[LengthPoint]) -> float | None:
    """The one-sided t test of the 128- and ~2K-token log medians latdoc had."""
    spread = jitter(points)
    if spread is None or spread.sigma <= 0:
        return None
    short = points[0]
    long = min(points, key=lambda p: (abs(p.prompt_tokens - 2048), -p.prompt_tokens))

    def variance(n: int) -> float:
        return 1.0 / max(1, n) if n <= 2 else math.pi / (2 * n)

    difference = math.log(long.best_ms) - math.log(short.best_ms)
    error = spread.sigma * math.sqrt(variance(long.n) + variance(short.n))
    return float(stats.t.sf(difference / error, spread.df))


def _permuted(statistic: Callable[[Array], Array], y: Array, rng: np.random.Generator) -> float:
    observed = statistic(y[None, :])[0]
    shuffled = rng.permuted(np.tile(y, (PERMUTATIONS, 1)), axis=1)
    return float((1 + np.sum(statistic(shuffled) >= observed - 1e-9)) / (1 + PERMUTATIONS))


def pairs(points: Sequence[LengthPoint], rng: np.random.Generator) -> float:
    x, y = _groups(points)
    order = np.sign(x[None, :] - x[:, None])
    return _permuted(
        lambda ys: (order[None] * np.sign(ys[:, None, :] - ys[:, :, None])).sum(axis=(1, 2)),
        y,
        rng,
    )


def faster_half(points: Sequence[LengthPoint], rng: np.random.Generator) -> float:
    counts = [len(p.values_ms) for p in points]
    _, y = _groups(points)
    group = np.concatenate([np.full((n + 1) // 2, i) for i, n in enumerate(counts)])
    order = np.sign(group[None, :] - group[:, None])

    def statistic(ys: Array) -> Array:
        halves, start = [], 0
        for n in counts:
            halves.append(np.sort(ys[:, start : start + n], axis=1)[:, : (n + 1) // 2])
            start += n
        v = np.concatenate(halves, axis=1)
        return (order[None] * np.sign(v[:, None, :] - v[:, :, None])).sum(axis=(1, 2))

    return _permuted(statistic, y, rng)


def fastest(points: Sequence[LengthPoint]) -> float:
    tokens = [p.prompt_tokens for p in points]
    lows = [min(p.values_ms) for p in points]
    return float(stats.kendalltau(tokens, lows, alternative="greater").pvalue)


CANDIDATES: dict[str, Callable[[Sequence[LengthPoint], np.random.Generator], float | None]] = {
    "t test 2K": lambda p, _: t_test_2k(p),
    "pairs": pairs,
    "faster half": faster_half,
    "fastest": lambda p, _: fastest(p),
    "log ranks": lambda p, _: trend_p(p),
}

ENDPOINTS: dict[str, Shape | Curve] = {
    "new user: 0.35 ms/token, 30% busy +2 s": NEW_USER,
    "new user, busy +4 s": Curve(45.0, 0.35, busy_ms=4000.0),
    "issue 17: 10× at 2K, 30% busy +1 s": Curve(200 - 128 * 0.9375, 0.9375, 0.1, 0.3, 1000.0),
    "flat, log-normal σ 0.2": SHAPES["lognormal"],
    "flat, 30% busy +2 s": Curve(300.0, 0.0),
    "flat, busy 30% (+5×)": SHAPES["busy"],
}


def draw_points(
    rng: np.random.Generator, draw: Shape | Curve, lengths: Sequence[int]
) -> tuple[LengthPoint, ...]:
    pairs_: list[tuple[int, float]] = []
    for tokens in lengths:
        n = int(rng.integers(7, 10)) if tokens == lengths[0] else 1
        n += int(tokens == 2048 and rng.random() < 0.5)
        values = (
            draw.values(rng, n, 300.0) if isinstance(draw, Shape) else draw.values(rng, tokens, n)
        )
        pairs_ += [(tokens, float(v)) for v in values]
    return length_points(pairs_)


def simulate(reps: int, seed: int) -> Table:
    table = Table(title=f"Fires at α {ALPHA} (share of {reps} simulated runs)")
    table.add_column("endpoint")
    table.add_column("lengths", justify="right")
    for name in CANDIDATES:
        table.add_column(name, justify="right")
    for label, draw in ENDPOINTS.items():
        for count in (5, 4, 3):
            rng = np.random.default_rng(seed)
            fired = dict.fromkeys(CANDIDATES, 0)
            for _ in range(reps):
                points = draw_points(rng, draw, LENGTHS[:count])
                for name, test in CANDIDATES.items():
                    p = test(points, rng)
                    fired[name] += p is not None and p < ALPHA
            table.add_row(label, str(count), *(f"{fired[n] / reps:.3f}" for n in CANDIDATES))
    return table


# --- the lab ------------------------------------------------------------------------


def lab_run(seed: int) -> tuple[int, bool, str, str, float | None, str]:
    """One run against the lab: whether input length was named, the verdict, the
    lengths measured, the trend p and the rule's sentence."""
    from latdoc.analysis.kinds.input_length import trend_p as rule_p

    config = lab_config(seed)
    with LabProcess(config) as lab:
        plan = DiagnosisPlan(Endpoint(lab.base_url, config.model), seed=seed)
        result = asyncio.run(measure_steps(plan))
    context = RunContext(f"seed-{seed}", lab.base_url, config.model, notes=tuple(result.notes))
    d = build_diagnosis(result.samples, context)
    named = Kind.INPUT_LENGTH in (d.verdict.primary, *d.verdict.contributing)
    verdict = " + ".join(str(k) for k in (d.verdict.primary, *d.verdict.contributing))
    curve = d.length
    lengths = "" if curve is None else " ".join(str(p.prompt_tokens) for p in curve.points)
    p = None if curve is None else rule_p(curve.points)
    why = "" if d.length_check is None else d.length_check.why
    return seed, named, verdict, lengths, p, why


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="simulated runs per row")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=10, help="lab runs (0: none)")
    parser.add_argument("--jobs", type=int, default=4, help="lab runs at once")
    args = parser.parse_args()
    console = Console(width=160)
    if args.reps > 0:
        console.print(simulate(args.reps, args.seed))
    if args.seeds <= 0:
        return
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        runs = list(pool.map(lab_run, range(args.seeds)))
    table = Table(title="The new user's endpoint in the lab, measured over loopback")
    for column in ("seed", "named", "verdict", "lengths", "trend p", "length rule"):
        table.add_column(column)
    for seed, named, verdict, lengths, p, why in runs:
        shown = "-" if p is None else f"{p:.2g}"
        table.add_row(str(seed), "yes" if named else "no", verdict, lengths, shown, why)
    console.print(table)
    named_runs = sum(1 for run in runs if run[1])
    console.print(f"input length named in {named_runs} of {len(runs)} runs")


if __name__ == "__main__":
    main()
