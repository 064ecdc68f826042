"""How often each test latdoc prints cries wolf, and how often it sees a real difference.

Every test latdoc prints a "significant", "better", "worse", a peak or a nearest
vantage from is run here as the pure function it is, on records drawn from a known
model, many seeded times:

- on **null** data (both sides drawn alike, of a few shapes: log-normal, a busy server
  that adds a second to 30% of requests, a heavy tail, a coarse timer's ties) the share
  of runs that say "significant" is its false-positive rate, which must be at most the
  policy's α (:data:`latdoc.analysis.policy.ALPHA`). A rate is *met* when its count is
  within the 99th percentile of Binomial(replications, α): an exceedance beyond it is
  the test's, not the draw's;
- with a stated **effect** (the other side's median 10% or 25% slower, a 1.3× and a 1.5×
  peak, a success rate 80% against 95%) the share that sees it in the right direction is
  the test's power at that effect.

The tests: ``compare`` (Mann–Whitney + Holm over every metric of every group,
:func:`~latdoc.analysis.compare.compare_samples`); ``verify``'s verdict and the whole
screen under it (:func:`~latdoc.features.verify.analysis.judge_arms`), at a fixed n and
through the real sequential loop (:func:`~latdoc.features.verify.send.run_experiment`
asking :func:`~latdoc.analysis.compare.ratio_precision` after each block, as
``--precision`` does); ``verify --remedy conversation`` (Wilcoxon per strategy, paired
by turn); ``verify --remedy retry`` (Fisher's exact test); ``vantage`` (the nearest
against the runner-up); the watch's peak (a permutation test that picks its peak
again in every shuffle); and the length rule's trend test (TTFT ranks against the log
of the prompt length over every request of a diagnosis's length curve,
:func:`~latdoc.analysis.kinds.input_length.trend_p`). ``bench/compare_null.py``
measures ``compare`` end to end against a lab process; this one is the fast,
many-replication version of every test.
Run: ``make bench`` or ``.venv/bin/python bench/false_positives.py [--reps 500] [--seed 1]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial

import numpy as np
import numpy.typing as npt
from rich.console import Console
from rich.table import Table
from scipy.stats import beta, binom

from latdoc.analysis.compare import MEDIAN, METRICS, compare_samples, ratio_precision
from latdoc.analysis.gates import check_gates, parse_gates
from latdoc.analysis.kinds.input_length import trend_p
from latdoc.analysis.length import length_points
from latdoc.analysis.policy import ALPHA
from latdoc.features.vantage.analysis import compare_vantages, vantage_row
from latdoc.features.verify.analysis import judge_arms
from latdoc.features.verify.conversation.analysis import KEEP, TurnRecord, outcomes
from latdoc.features.verify.retry.analysis import TrialOutcome, compare_reliability
from latdoc.features.verify.send import Arm, run_experiment
from latdoc.features.watch.analysis import DAY_S, BucketCounts, ClockReport, clock_report_of_buckets
from latdoc.probe import Endpoint
from latdoc.records import RequestTrace, Sample, Step
from latdoc.workload import Budget

NS = 1_000_000
STARTED = datetime(2026, 12, 1, tzinfo=UTC)
TOLERANCE = 0.99
"""A false-positive count is the test's own (not met) beyond this quantile of
Binomial(replications, α)."""
BOUND = 0.95
"""The one-sided level of the printed upper bound of a rate (Clopper–Pearson)."""

Draw = Callable[[np.random.Generator, int], npt.NDArray[np.float64]]


# --- the null shapes -----------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """A latency distribution of median about ``median_ms``; ``scale`` stretches it (an
    effect), ``tick_ms`` rounds it as a coarse timer would (ties)."""

    name: str
    draw: Draw
    tick_ms: float = 0.0

    def values(
        self, rng: np.random.Generator, n: int, median_ms: float, scale: float = 1.0
    ) -> npt.NDArray[np.float64]:
        v = median_ms * scale * self.draw(rng, n)
        if self.tick_ms:
            v = np.maximum(self.tick_ms, np.round(v / self.tick_ms) * self.tick_ms)
        return v


@dataclass(frozen=True)
class LogNormal:
    sigma: float

    def __call__(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.float64]:
        return rng.lognormal(0.0, self.sigma, n)


@dataclass(frozen=True)
class Busy:
    """A server busy for ``share`` of requests, each of them ``extra`` × the median more."""

    share: float
    extra: float

    def __call__(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.float64]:
        return rng.lognormal(0.0, 0.1, n) + self.extra * (rng.random(n) < self.share)


SHAPES = {
    "lognormal": Shape("log-normal σ 0.2", LogNormal(0.2)),
    "tight": Shape("log-normal σ 0.1", LogNormal(0.1)),
    "busy": Shape("busy 30% (+5×)", Busy(0.3, 5.0)),
    "heavy": Shape("heavy tail σ 0.8", LogNormal(0.8)),
    "ticks": Shape("10 ms ticks (ties)", LogNormal(0.1), tick_ms=10.0),
    "day": Shape("log-normal σ 0.3", LogNormal(0.3)),
}


# --- records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Parts:
    """What a request's time is made of, beside its first token (of a :class:`Shape`)."""

    queue_ms: float = 0.0
    """The client queue's median (a pool wait, log-normal σ 0.5); 0: a fraction of a ms."""
    wait_ms: float = 0.0
    """The server's wait before its first byte (log-normal σ 0.3), apart from the first
    token's time; 0: the first byte comes with the first token."""
    tokens: int = 8
    gap_ms: float = 6.0
    """Each token after the first, the decode's noise (log-normal σ 0.15) its own."""
    bare: bool = False
    """Only the first token and the end are timed: TTFT and total are the table."""


TTFT_HEAVY = Parts()
"""Total, server wait and the first token move together: the table repeats the headline."""
DECODE_HEAVY = Parts(tokens=32, gap_ms=20.0)
"""Total and TPOT are mostly the decode's, apart from TTFT."""
APART = Parts(queue_ms=20.0, wait_ms=30.0, tokens=32, gap_ms=20.0)
"""Client queue, server wait, TTFT and the decode each of their own noise: the rest of a
table tests what its headline does not, the worst case for a screen of two families."""
BARE = Parts(tokens=32, gap_ms=20.0, bare=True)
"""TTFT and a decode-heavy total, nothing else: a table of two independent rows."""


def traces(
    rng: np.random.Generator,
    n: int,
    shape: Shape,
    *,
    ttft_ms: float = 150.0,
    scale: float = 1.0,
    parts: Parts = TTFT_HEAVY,
) -> list[RequestTrace]:
    """``n`` requests on reused connections: a client queue and a server wait (of
    ``parts``), the first token ``shape`` of median ``ttft_ms`` × ``scale`` after them,
    and ``parts.tokens`` tokens."""
    first = shape.values(rng, n, ttft_ms, scale)
    if parts.queue_ms:
        queue = parts.queue_ms * rng.lognormal(0.0, 0.5, n)
    else:
        queue = 0.05 + rng.exponential(0.1, n)
    wait = parts.wait_ms * rng.lognormal(0.0, 0.3, n) if parts.wait_ms else np.zeros(n)
    decode = parts.gap_ms * (parts.tokens - 1) * rng.lognormal(0.0, 0.15, n)
    return [
        _trace(float(q), float(w), float(t), float(d), parts, i)
        for i, (q, w, t, d) in enumerate(zip(queue, wait, first, decode, strict=True))
    ]


def _trace(
    queue_ms: float, wait_ms: float, first_ms: float, decode_ms: float, parts: Parts, i: int
) -> RequestTrace:
    queue_done = round(queue_ms * NS)
    sent = queue_done + 50_000
    first_byte = sent + round(wait_ms * NS) + 1_000
    first_token = first_byte + max(1_000, round(first_ms * NS))
    if not parts.wait_ms:
        first_token = max(sent + 2_000, round(first_ms * NS))
        first_byte = first_token - 1_000
    trace = RequestTrace(
        started_at=STARTED + timedelta(seconds=i),
        t0_ns=0,
        url="http://bench.invalid/v1/chat/completions",
        model="m",
        dialect="openai-chat",
        new_connection=False,
        queue_done_ns=queue_done,
        sent_ns=sent,
        first_byte_ns=first_byte,
        first_token_ns=first_token,
        done_ns=first_token + round(decode_ms * NS),
        status=200,
        output_tokens=parts.tokens,
        output_tokens_exact=True,
    )
    if parts.bare:
        trace = replace(trace, queue_done_ns=None, sent_ns=None, first_byte_ns=None,
                        output_tokens=None, output_tokens_exact=False)  # fmt: skip
    return trace


def samples(
    traces_: Sequence[RequestTrace],
    step: Step,
    *,
    tokens: int | None = None,
    start: int = 0,
) -> list[Sample]:
    return [
        Sample(step, t, target_prompt_tokens=tokens, index=start + i) for i, t in enumerate(traces_)
    ]


# --- a rate and its bar ---------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    """``hits`` of ``reps`` replications said what is measured."""

    hits: int
    reps: int

    @property
    def share(self) -> float:
        return self.hits / self.reps

    @property
    def upper(self) -> float:
        """Clopper–Pearson one-sided upper bound at :data:`BOUND`."""
        return (
            1.0
            if self.hits >= self.reps
            else float(beta.ppf(BOUND, self.hits + 1, self.reps - self.hits))
        )

    def interval(self) -> tuple[float, float]:
        """Clopper–Pearson two-sided 95% interval."""
        k, n = self.hits, self.reps
        low = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
        high = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
        return low, high

    def within(self, alpha: float = ALPHA) -> bool:
        """At most α, up to the binomial draw: ``hits`` no more than the
        :data:`TOLERANCE` quantile of Binomial(reps, α)."""
        return self.hits <= tolerated(self.reps, alpha)


def tolerated(reps: int, alpha: float = ALPHA) -> int:
    """The most false positives ``reps`` replications of a test at exactly ``alpha`` give,
    but one time in a hundred."""
    return int(binom.ppf(TOLERANCE, reps, alpha))


# --- compare -----------------------------------------------------------------------------

COMPARE_LENGTHS = (64, 1024)
"""A probe run's two prompt lengths (the long one's TTFT 3× the short's): with five
metrics each, ten tests in one comparison."""


def compare_run(
    rng: np.random.Generator,
    n: int,
    shape: Shape,
    scale: float = 1.0,
    *,
    lengths: Sequence[int] = COMPARE_LENGTHS,
    parts: Parts = TTFT_HEAVY,
) -> list[Sample]:
    out: list[Sample] = []
    for k, tokens in enumerate(lengths):
        drawn = traces(rng, n, shape, ttft_ms=150.0 * (1 + 2 * k), scale=scale, parts=parts)
        out += samples(drawn, Step.PROBE, tokens=tokens, start=len(out))
    return out


def compare_once(
    rng: np.random.Generator,
    n: int,
    shape: Shape,
    seed: int,
    effect: float = 0.0,
    *,
    lengths: Sequence[int] = COMPARE_LENGTHS,
    parts: Parts = TTFT_HEAVY,
) -> tuple[bool, bool]:
    """(any row significant, the first length's TTFT significant with A faster) of one
    comparison of A with B, B's first token ``1 + effect`` × A's."""
    a = compare_run(rng, n, shape, lengths=lengths, parts=parts)
    b = compare_run(rng, n, shape, 1 + effect, lengths=lengths, parts=parts)
    result = compare_samples(a, b, seed=seed)
    flagged = any(m.significant for g in result.groups for m in g.metrics)
    short = result.groups[0].get("ttft") if result.groups else None
    return flagged, short is not None and short.faster == "A"


# --- verify ----------------------------------------------------------------------------


NULL_GATES = "ttft_p50 > +0%, ttft_p95 > +0%, total_p50 > +0%, total_p90 > +0%"
"""Gates any worse B crosses: under the null about half the rows cross, so the family's
error is the tests' alone."""


def gates_once(
    rng: np.random.Generator,
    n: int,
    shape: Shape,
    effect: float = 0.0,
    gates: str = NULL_GATES,
    *,
    lengths: Sequence[int] = COMPARE_LENGTHS,
) -> bool:
    """Whether ``--fail-if gates`` fails B (its first token ``1 + effect`` × A's)."""
    a = compare_run(rng, n, shape, lengths=lengths)
    b = compare_run(rng, n, shape, 1 + effect, lengths=lengths)
    return bool(check_gates(a, b, parse_gates(gates)).failed)


def verify_once(
    rng: np.random.Generator,
    n: int,
    shape: Shape,
    seed: int,
    effect: float = 0.0,
    parts: Parts = TTFT_HEAVY,
) -> tuple[str, bool]:
    """(the verdict, any row of the screen significant) of ``n`` requests per arm, B's
    first token ``1 + effect`` × A's, judged on TTFT's median as most experiments are."""
    a = samples(traces(rng, n, shape, parts=parts), Step.EXPERIMENT)
    b = samples(traces(rng, n, shape, scale=1 + effect, parts=parts), Step.EXPERIMENT)
    verdict, comparison = judge_arms(a, b, metric="ttft", statistic=MEDIAN, seed=seed)
    return verdict, any(m.significant for g in comparison.groups for m in g.metrics)


class _Session:
    """A probe session whose requests are drawn, not sent."""

    def __init__(self, draw: Callable[[], RequestTrace]) -> None:
        self._draw = draw

    async def request(self, prompt: object, max_tokens: int) -> RequestTrace:
        return self._draw()


@dataclass(frozen=True)
class _Connection:
    """What an :class:`Arm` connects through: here, a :class:`_Session` of drawn requests."""

    draw: Callable[[], RequestTrace]

    @contextlib.asynccontextmanager
    async def session(self, endpoint: Endpoint, **_: object) -> AsyncIterator[_Session]:
        yield _Session(self.draw)


def sequential_once(
    seed: int,
    shape: Shape,
    *,
    precision: float,
    max_requests: int = 200,
    effect: float = 0.0,
) -> tuple[str, bool, int]:
    """(the verdict, any row significant, trials per arm) of an experiment run through
    the real loop: blocks of one trial per arm until the 95% interval of A ÷ B is within
    ± ``precision`` (``--precision``, asked after each block from the tenth) or the budget
    of ``max_requests`` is spent, then judged as ``verify`` judges it."""
    rng = np.random.default_rng(seed)

    def drawer(scale: float) -> Callable[[], RequestTrace]:
        return lambda: traces(rng, 1, shape, scale=scale)[0]

    arms = [
        Arm(
            name,
            "",
            Endpoint("http://bench.invalid", "m"),
            _Connection(drawer(s)),  # type: ignore[arg-type]
            prompt=lambda r: "x",
            prompt_cost=1,
            max_tokens=8,
        )
        for name, s in (("A", 1.0), ("B", 1 + effect))
    ]
    read = next(r for k, _, r in METRICS if k == "ttft")

    def precise(a: Sequence[Sample], b: Sequence[Sample]) -> bool:
        return ratio_precision(a, b, read, statistic=MEDIAN) <= precision

    result = asyncio.run(run_experiment(arms, Budget(max_requests), seed=seed, should_stop=precise))
    a, b = result.samples["A"], result.samples["B"]
    verdict, comparison = judge_arms(a, b, metric="ttft", statistic=MEDIAN, seed=seed)
    screen = any(m.significant for g in comparison.groups for m in g.metrics)
    return verdict, screen, len(a)


# --- verify --remedy conversation ---------------------------------------------------------

STRATEGIES = ("window:6", "summary:10", "reset:20")
"""``--strategies``' default: three tests on one screen."""


def conversation_once(
    rng: np.random.Generator,
    turns: int,
    shape: Shape,
    seed: int,
    effect: float = 0.0,
) -> dict[str, str]:
    """Each strategy's verdict against keeping everything, in a chat whose TTFT grows by
    a tenth of its first turn's each turn; the first strategy's TTFT is ``1 - effect`` ×
    keep's at every turn (a saving), the others' are keep's own distribution."""
    growth = 1 + 0.1 * np.arange(turns)
    records: list[TurnRecord] = []
    for k, name in enumerate((KEEP, *STRATEGIES)):
        scale = 1 - effect if k == 1 else 1.0
        ttft = shape.values(rng, turns, 200.0, scale) * growth
        drawn = traces(rng, turns, SHAPES["lognormal"])
        for turn, (t, trace) in enumerate(zip(ttft, drawn, strict=True), start=1):
            first = round(float(t) * NS)
            trace = replace(trace, first_byte_ns=first - 1_000, first_token_ns=first,
                            done_ns=first + 40 * NS)  # fmt: skip
            records.append(TurnRecord(name, turn, trace))
    result = outcomes(records, turns, order=(KEEP, *STRATEGIES), seed=seed)
    return {o.strategy: o.verdict for o in result if o.strategy != KEEP}


# --- verify --remedy retry --------------------------------------------------------------


def retry_once(
    rng: np.random.Generator, trials: int, rate_a: float, rate_b: float, seed: int
) -> str:
    """The verdict of ``trials`` logical requests per arm answered at these rates."""

    def arm(rate: float) -> list[TrialOutcome]:
        ok = rng.random(trials) < rate
        ms = 300.0 * rng.lognormal(0.0, 0.2, trials)
        return [TrialOutcome(bool(o), float(t), 1, 0.0) for o, t in zip(ok, ms, strict=True)]

    return compare_reliability(arm(rate_a), arm(rate_b), seed=seed).verdict


# --- vantage ----------------------------------------------------------------------------


def vantage_once(
    rng: np.random.Generator, vantages: int, n: int, shape: Shape, effect: float = 0.0
) -> tuple[bool, bool]:
    """(the nearest named significantly nearer, and it is the truly nearest) of
    ``vantages`` places whose ``n`` new connections each measure a round trip of
    ``shape`` about 40 ms; the first place's is ``1 - effect`` × the others'."""
    rows = []
    for k in range(vantages):
        rtt = shape.values(rng, n, 40.0, 1 - effect if k == 0 else 1.0)
        rows.append(vantage_row(f"v{k}", [_connection(float(r)) for r in rtt]))
    result = compare_vantages(rows)
    return result.significant, result.significant and result.nearest == "v0"


def _connection(rtt_ms: float) -> RequestTrace:
    dns = 1_000_000
    connect = dns + round(rtt_ms * NS)
    ttft = connect + 150 * NS
    return RequestTrace(
        started_at=STARTED, t0_ns=0, url="http://bench.invalid/v1/chat/completions", model="m",
        dialect="openai-chat", new_connection=True, queue_done_ns=100_000, dns_done_ns=dns,
        connect_done_ns=connect, sent_ns=connect + 50_000, first_byte_ns=ttft - 1_000,
        first_token_ns=ttft, done_ns=ttft + 40 * NS, status=200,
    )  # fmt: skip


# --- the watch's peak -------------------------------------------------------------------

PEAK_HOURS = range(14, 17)


@dataclass(frozen=True)
class Day:
    """A watched day: ``per_hour`` compared TTFTs an hour (``uneven``: 3 to 3 × that, a
    watch that missed ticks), of ``shape``, the peak hours ``peak`` × the others."""

    shape: Shape
    per_hour: int = 12
    uneven: bool = False

    def report(self, rng: np.random.Generator, seed: int, peak: float = 1.0) -> ClockReport:
        ttfts: dict[int, npt.NDArray[np.float64]] = {}
        for hour in range(24):
            n = int(rng.integers(3, 3 * self.per_hour + 1)) if self.uneven else self.per_hour
            ttfts[hour] = self.shape.values(rng, n, 100.0, peak if hour in PEAK_HOURS else 1.0)
        counts = [BucketCounts(h, v.size, 0, None) for h, v in ttfts.items()]
        return clock_report_of_buckets(counts, ttfts, bucket_s=3600, cycle_s=DAY_S, seed=seed)


def peak_once(
    rng: np.random.Generator, day: Day, seed: int, peak: float = 1.0
) -> tuple[bool, bool]:
    """(a daily pattern said, and its peak buckets overlap the true peak hours)."""
    report = day.report(rng, seed, peak)
    found = report.pattern and report.peak is not None
    return found, found and bool(set(report.peak.buckets) & set(PEAK_HOURS))  # type: ignore[union-attr]


# --- the studies ----------------------------------------------------------------------

# --- the length rule's trend test ------------------------------------------------------

LENGTHS = (128, 512, 2048, 8192, 32768)
"""A diagnosis's length curve: seven to nine requests sent alone at the shortest, one at
each longer length, the 2K reference asked twice half of the time."""


@dataclass(frozen=True)
class Curve:
    """TTFT ``base_ms + per_token_ms·n`` times a log-normal jitter of ``sigma``, and busy
    periods that add an exponential wait of mean ``busy_ms`` to ``busy_share`` of the
    requests (they only ever add)."""

    base_ms: float
    per_token_ms: float
    sigma: float = 0.05
    busy_share: float = 0.3
    busy_ms: float = 2000.0

    def values(self, rng: np.random.Generator, tokens: int, n: int) -> npt.NDArray[np.float64]:
        ttft = (self.base_ms + self.per_token_ms * tokens) * rng.lognormal(0.0, self.sigma, n)
        return ttft + (rng.random(n) < self.busy_share) * rng.exponential(self.busy_ms, n)


def length_once(
    rng: np.random.Generator, draw: Shape | Curve, lengths: Sequence[int] = LENGTHS
) -> bool:
    """Whether the length rule's trend test says TTFT rises with the length over one run's
    requests: a null ``Shape`` (median 300 ms at every length) or a growing ``Curve``."""
    pairs: list[tuple[int, float]] = []
    for tokens in lengths:
        n = int(rng.integers(7, 10)) if tokens == lengths[0] else 1
        n += int(tokens == 2048 and rng.random() < 0.5)
        values = (
            draw.values(rng, n, 300.0) if isinstance(draw, Shape) else draw.values(rng, tokens, n)
        )
        pairs += [(tokens, float(v)) for v in values]
    p = trend_p(length_points(pairs))
    return p is not None and p < ALPHA


NEW_USER = Curve(45.0, 0.35)
"""The endpoint of a new user: prefill 0.35 ms a token (TTFT 129× from 128 to 32K
tokens), 30% of the requests meeting a busy server that adds 2 s on average."""


Outcome = dict[str, float]
"""One replication: each event measured (1.0 when it happened), by the row it counts in;
``trials`` is a count, summarised by its median."""
Replicate = Callable[[np.random.Generator, int], Outcome]


@dataclass(frozen=True)
class Study:
    """Replications of one scenario; each event it measures is a row of a table."""

    test: str
    scenario: str
    """The null scenario, or the effect a power study states."""
    n: str
    reps: int
    replicate: Replicate
    null: bool = True


def _compare(rng: np.random.Generator, r: int, shape: str, effect: float = 0.0) -> Outcome:
    flagged, seen = compare_once(rng, 20, SHAPES[shape], r, effect)
    return {"compare: any row significant": flagged, "compare: TTFT, B slower": seen}


def _gates(rng: np.random.Generator, r: int, shape: str, effect: float = 0.0,
           gates: str = NULL_GATES) -> Outcome:  # fmt: skip
    return {"gates: a gate failed": gates_once(rng, 20, SHAPES[shape], effect, gates)}


def _verify(
    rng: np.random.Generator, r: int, shape: str, effect: float = 0.0, parts: Parts = TTFT_HEAVY
) -> Outcome:
    verdict, screen = verify_once(rng, 20, SHAPES[shape], r, effect, parts)
    return {
        "verify: the verdict": verdict != "no_difference",
        "verify: the screen (verdict + table)": screen,
        "verify: the verdict, worse": verdict == "worse",
    }


def _sequential(
    rng: np.random.Generator, r: int, shape: str, precision: float, effect: float = 0.0
) -> Outcome:
    seed = int(rng.integers(2**31))
    verdict, screen, trials = sequential_once(seed, SHAPES[shape], precision=precision,
                                              effect=effect)  # fmt: skip
    return {
        "verify --precision: the verdict": verdict != "no_difference",
        "verify --precision: the screen": screen,
        "verify --precision: the verdict, worse": verdict == "worse",
        "trials": trials,
    }


def _conversation(rng: np.random.Generator, r: int, shape: str, effect: float = 0.0) -> Outcome:
    verdicts = conversation_once(rng, 20, SHAPES[shape], r, effect)
    first = STRATEGIES[0]
    return {
        "conversation: any strategy": any(v != "no_difference" for v in verdicts.values()),
        f"conversation: {first} alone": verdicts[first] != "no_difference",
        f"conversation: {first} better": verdicts[first] == "better",
    }


def _retry(rng: np.random.Generator, r: int, rate_a: float, rate_b: float) -> Outcome:
    verdict = retry_once(rng, 40, rate_a, rate_b, r)
    return {"retry: the verdict": verdict != "no_difference", "retry: better": verdict == "better"}


def _vantage(
    rng: np.random.Generator, r: int, vantages: int, shape: str, effect: float = 0.0
) -> Outcome:
    named, right = vantage_once(rng, vantages, 10, SHAPES[shape], effect)
    return {"vantage: nearest is nearer": named, "vantage: the true nearest named": right}


def _peak(
    rng: np.random.Generator, r: int, shape: str, uneven: bool = False, peak: float = 1.0
) -> Outcome:
    per_hour = 8 if uneven else 12
    found, right = peak_once(rng, Day(SHAPES[shape], per_hour, uneven), r, peak)
    return {"watch: a daily pattern": found, "watch: the true peak found": right}


def _length(
    rng: np.random.Generator,
    r: int,
    shape: str = "",
    curve: Curve | None = None,
    lengths: Sequence[int] = LENGTHS,
) -> Outcome:
    draw = SHAPES[shape] if curve is None else curve
    return {"length: TTFT rises with the length": length_once(rng, draw, lengths)}


def studies(reps: int) -> list[Study]:
    """Every study at ``reps`` replications (the costly ones at a share of it)."""
    half, third = max(20, reps // 2), max(20, reps // 3)
    lognormal, busy = SHAPES["lognormal"].name, SHAPES["busy"].name
    group, arm, sent = "20/group, 2 lengths × 5 metrics", "20/arm", "≤ 100/arm"
    curve = "7–9 + 1–2 at 4 lengths"
    null = [
        Study("compare", lognormal, group, reps, partial(_compare, shape="lognormal")),
        Study("compare", busy, group, half, partial(_compare, shape="busy")),
        Study("gates", f"{lognormal}, 4 gates at +0%", group, reps,
              partial(_gates, shape="lognormal")),
        Study("gates", f"{busy}, 4 gates at +0%", group, half, partial(_gates, shape="busy")),
        Study("verify", f"{lognormal}, TTFT-heavy", arm, reps,
              partial(_verify, shape="lognormal")),
        Study("verify", f"{lognormal}, decode-heavy", arm, reps,
              partial(_verify, shape="lognormal", parts=DECODE_HEAVY)),
        Study("verify", f"{lognormal}, every metric its own noise", arm, reps,
              partial(_verify, shape="lognormal", parts=APART)),
        Study("verify", f"{busy}, TTFT and total only, apart", arm, half,
              partial(_verify, shape="busy", parts=BARE)),
        Study("verify --precision", f"{SHAPES['tight'].name}, --precision 0.05", sent, third,
              partial(_sequential, shape="tight", precision=0.05)),
        Study("verify --precision", f"{busy}, --precision 0.1", sent, third,
              partial(_sequential, shape="busy", precision=0.1)),
        Study("conversation", f"{lognormal}, 3 strategies", "20 turns", reps,
              partial(_conversation, shape="lognormal")),
        Study("conversation", f"{busy}, 3 strategies", "20 turns", reps,
              partial(_conversation, shape="busy")),
        Study("retry", "80% answered in both arms", "40/arm", reps,
              partial(_retry, rate_a=0.8, rate_b=0.8)),
        Study("retry", "95% answered in both arms", "40/arm", reps,
              partial(_retry, rate_a=0.95, rate_b=0.95)),
        Study("vantage", f"2 vantages alike, {lognormal}", "10/vantage", reps,
              partial(_vantage, vantages=2, shape="lognormal")),
        Study("vantage", f"4 vantages alike, {lognormal}", "10/vantage", reps,
              partial(_vantage, vantages=4, shape="lognormal")),
        Study("vantage", f"2 vantages alike, {SHAPES['ticks'].name}", "10/vantage", reps,
              partial(_vantage, vantages=2, shape="ticks")),
        Study("watch", f"flat day, {SHAPES['day'].name}", "12/hour", half,
              partial(_peak, shape="day")),
        Study("watch", f"flat day, {busy}", "12/hour", half, partial(_peak, shape="busy")),
        Study("watch", f"flat day, {SHAPES['heavy'].name}, uneven hours", "3–24/hour", half,
              partial(_peak, shape="heavy", uneven=True)),
        Study("length", f"flat curve, {lognormal}", curve, reps,
              partial(_length, shape="lognormal")),
        Study("length", f"flat curve, {busy}", curve, reps, partial(_length, shape="busy")),
        Study("length", f"flat curve, {SHAPES['heavy'].name}", curve, reps,
              partial(_length, shape="heavy")),
        Study("length", f"flat curve, {busy}, 3 lengths", "7–9 + 1–2 at 2 lengths", reps,
              partial(_length, shape="busy", lengths=LENGTHS[:3])),
    ]  # fmt: skip
    power = [
        Study("compare", "B's TTFT 10% slower", "20/group", half,
              partial(_compare, shape="lognormal", effect=0.10)),
        Study("compare", "B's TTFT 25% slower", "20/group", half,
              partial(_compare, shape="lognormal", effect=0.25)),
        Study("gates", "B's TTFT 20% slower, ttft_p50 > +10%", "20/group", half,
              partial(_gates, shape="lognormal", effect=0.20, gates="ttft_p50 > +10%")),
        Study("gates", "B's TTFT 50% slower, ttft_p50 > +10%", "20/group", half,
              partial(_gates, shape="lognormal", effect=0.50, gates="ttft_p50 > +10%")),
        Study("verify", "B's TTFT 10% slower", arm, half,
              partial(_verify, shape="lognormal", effect=0.10)),
        Study("verify", "B's TTFT 25% slower", arm, half,
              partial(_verify, shape="lognormal", effect=0.25)),
        Study("verify --precision", "B's TTFT 10% slower, σ 0.1, --precision 0.05", sent, third,
              partial(_sequential, shape="tight", precision=0.05, effect=0.10)),
        Study("conversation", "window:6 saves 10% a turn", "20 turns", half,
              partial(_conversation, shape="lognormal", effect=0.10)),
        Study("conversation", "window:6 saves 25% a turn", "20 turns", half,
              partial(_conversation, shape="lognormal", effect=0.25)),
        Study("retry", "80% → 95% answered", "40/arm", half,
              partial(_retry, rate_a=0.8, rate_b=0.95)),
        Study("retry", "60% → 90% answered", "40/arm", half,
              partial(_retry, rate_a=0.6, rate_b=0.9)),
        Study("vantage", "the nearest's RTT 10% lower", "10/vantage", half,
              partial(_vantage, vantages=2, shape="lognormal", effect=0.10)),
        Study("vantage", "the nearest's RTT 25% lower", "10/vantage", half,
              partial(_vantage, vantages=2, shape="lognormal", effect=0.25)),
        Study("watch", "14–17 h 1.3× the rest", "12/hour", third,
              partial(_peak, shape="day", peak=1.3)),
        Study("watch", "14–17 h 1.5× the rest", "12/hour", third,
              partial(_peak, shape="day", peak=1.5)),
        Study("length", "0.35 ms/token, 30% busy +2 s", curve, half,
              partial(_length, curve=NEW_USER)),
        Study("length", "0.35 ms/token, 30% busy +2 s, to 8K", "7–9 + 1–2 at 3 lengths", half,
              partial(_length, curve=NEW_USER, lengths=LENGTHS[:4])),
    ]  # fmt: skip
    return null + [replace(s, null=False) for s in power]


POWER_EVENT = {
    "compare": "compare: TTFT, B slower",
    "gates": "gates: a gate failed",
    "verify": "verify: the verdict, worse",
    "verify --precision": "verify --precision: the verdict, worse",
    "conversation": f"conversation: {STRATEGIES[0]} better",
    "retry": "retry: better",
    "vantage": "vantage: the true nearest named",
    "watch": "watch: the true peak found",
    "length": "length: TTFT rises with the length",
}
"""What a power study counts: the effect seen, in its direction."""
NULL_EVENTS = {
    "compare": ("compare: any row significant",),
    "gates": ("gates: a gate failed",),
    "verify": ("verify: the verdict", "verify: the screen (verdict + table)"),
    "verify --precision": ("verify --precision: the verdict", "verify --precision: the screen"),
    "conversation": ("conversation: any strategy", f"conversation: {STRATEGIES[0]} alone"),
    "retry": ("retry: the verdict",),
    "vantage": ("vantage: nearest is nearer",),
    "watch": ("watch: a daily pattern",),
    "length": ("length: TTFT rises with the length",),
}
"""What a null study counts: each "significant" a screen can print."""


def run_study(study: Study, seed: int, index: int) -> tuple[dict[str, Rate], float | None, float]:
    """Each event's rate over the study's replications, the median trials (sequential
    studies), and the seconds it took."""
    started = time.perf_counter()
    rng = np.random.default_rng([seed, index])
    events: dict[str, int] = {}
    trials: list[float] = []
    for r in range(study.reps):
        for name, value in study.replicate(rng, r).items():
            if name == "trials":
                trials.append(value)
            else:
                events[name] = events.get(name, 0) + int(bool(value))
    rates = {name: Rate(hits, study.reps) for name, hits in events.items()}
    median = float(np.median(trials)) if trials else None
    return rates, median, time.perf_counter() - started


def _mark(met: bool) -> str:
    return "[green]met[/]" if met else "[red]not met[/]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500, help="replications of a null study")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    args = parser.parse_args()
    plan = studies(args.reps)
    started = time.perf_counter()
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_study, s, args.seed, i) for i, s in enumerate(plan)]
        results = [f.result() for f in futures]
    console = Console(width=150)
    title = (
        f"False positives on null data: α = {ALPHA:g}; met when the count is within "
        f"Binomial(reps, α)'s {TOLERANCE:.0%} quantile (tolerated)"
    )
    null = Table(title=title)
    for column in ("test: what says so", "null scenario", "n", "reps", "FP rate",
                   f"{BOUND:.0%} upper", "tolerated", ""):  # fmt: skip
        null.add_column(column, justify="right" if column in ("reps", "FP rate") else "left")
    power = Table(title="Power at a stated effect: the effect seen, in its direction")
    for column in ("test", "effect", "n", "reps", "power", "95% interval"):
        power.add_column(column, justify="right" if column in ("reps", "power") else "left")
    for study, (rates, trials, _) in zip(plan, results, strict=True):
        n = study.n if trials is None else f"{study.n}, median {trials:g}"
        if study.null:
            for event in NULL_EVENTS[study.test]:
                rate = rates[event]
                null.add_row(event, study.scenario, n, str(rate.reps), f"{rate.share:.3f}",
                             f"{rate.upper:.3f}", f"{tolerated(rate.reps) / rate.reps:.3f}",
                             _mark(rate.within()))  # fmt: skip
        else:
            rate = rates[POWER_EVENT[study.test]]
            low, high = rate.interval()
            power.add_row(study.test, study.scenario, n, str(rate.reps), f"{rate.share:.3f}",
                          f"{low:.3f}–{high:.3f}")  # fmt: skip
    console.print(null)
    console.print(power)
    spent = sum(r[2] for r in results)
    wall = time.perf_counter() - started
    console.print(f"{len(plan)} studies, {spent:.0f} s of work in {wall:.0f} s on {args.jobs} "
                  f"processes (seed {args.seed})")  # fmt: skip


if __name__ == "__main__":
    main()
