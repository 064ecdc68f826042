"""latdoc's statistics policy: every α, family, interval and decision threshold, once.

Each value here is read by every code path that tests the same quantity, so one
screen can never apply two rules to one number: a comparison's table and an
experiment's verdict, the knee of a load sweep and the queueing rule, the network
rule and its nearer-region remedy, the client-delay rule and the load report's note.
A rule's threshold that no other code path reads stays in its own module under
:mod:`latdoc.analysis.kinds`.

Values the data model needs (:mod:`latdoc.model` sits below the analysis) are
defined there and re-exported here, so this module still documents every value.
The table in ``docs/method.md`` ("The statistics policy") lists each constant of
this module with its value; a test keeps the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from latdoc.model import CURVE_CONFIDENCE, QUANTILE_METHOD

__all__ = [
    "ALPHA",
    "BOOTSTRAP_METHOD",
    "CLIENT_CPU_SHARE",
    "CLIENT_CPU_TARGET",
    "CLIENT_DELAY_MS",
    "CLIENT_DELAY_STATISTIC",
    "CLIENT_LAG_MS",
    "CONFIDENCE",
    "CORRECTION",
    "FAMILIES",
    "GENERATOR_BEHIND_MS",
    "GENERATOR_BEHIND_SHARE",
    "HIGH_RTT_MS",
    "KNEE_MIN_RISE_MS",
    "KNEE_RATIO",
    "LENGTH_RESAMPLES",
    "LITTLE_TOLERANCE",
    "LOSSY_RETRANSMIT_SHARE",
    "LOSS_MIN_SEGMENTS",
    "MEAN_INTERVAL",
    "MEDIAN_INTERVAL",
    "MEDIAN_INTERVAL_DF",
    "MIN_INTERVAL_N",
    "MIN_KEEPALIVE_N",
    "MIN_N",
    "NEGLIGIBLE_MS",
    "NEGLIGIBLE_SHARE",
    "NOTICEABLE_FRACTION",
    "PEAK_MARGIN",
    "PEAK_MIN_BUCKET_TTFTS",
    "PEAK_MIN_RATIO",
    "PEAK_PERMUTATIONS",
    "PEAK_PERMUTATION_VALUES",
    "PLATEAU_GROWTH",
    "PROPORTION_INTERVAL",
    "QUANTILE_INTERVAL",
    "QUANTILE_METHOD",
    "RESAMPLES",
    "SERVICE_RATIO",
    "SLOW_SETUP_MS",
    "TCP_MIN_RTO_MS",
    "Family",
    "negligible",
    "queues_under_load",
]

# --- Significance -------------------------------------------------------------------

ALPHA: Final = 0.05
"""The error rate of every "significant" latdoc prints: one test alone is significant
below it, and a family of tests (:data:`FAMILIES`) is held below it as a whole by
:data:`CORRECTION`. One value for compare, verify (its verdict and its table),
conversation, retry, vantage and watch. It was 0.01 in compare and watch and 0.05
elsewhere; 0.05 keeps the power an experiment stopped at ``--precision`` has on tens
of trials, and Holm keeps a comparison of an endpoint with itself quiet as a whole
19 times in 20 (``bench/compare_null.py``)."""

CORRECTION: Final = "holm"
"""The multiple-testing correction of a family: Holm's step-down adjustment of the
p-values (every adjusted p compared with :data:`ALPHA`). It controls the family-wise
error rate whatever the dependence between the tests, which the metrics of one
request (TTFT, total, server wait) certainly have. A screen of two families (verify's
headline and its table) reads the second only after the first
(:attr:`Family.after`), so the screen as a whole errs at most α; the measured rates
are ``bench/false_positives.py``'s."""


@dataclass(frozen=True, slots=True)
class Family:
    """The tests adjusted together, where they are run."""

    where: str
    tests: str
    correction: str | None
    """:data:`CORRECTION`, or ``None`` for a family of one test."""
    after: str | None = None
    """The family (its :attr:`where`) this one is read after, or ``None``: serial
    gatekeeping, each adjusted p at least that family's p, so the two together err at
    most :data:`ALPHA`, not twice it."""


FAMILIES: Final = (
    Family(
        "compare",
        "every metric of every group of like requests both runs have",
        CORRECTION,
    ),
    Family(
        "verify: the headline",
        "the experiment's headline metric by its statistic, named before it ran: a "
        "family of one; the verdict is this row of the table",
        None,
    ),
    Family(
        "verify: the rest of the table",
        "every other metric of every group of the two arms, read after the headline: "
        "none is significant unless the headline's p is below α",
        CORRECTION,
        after="verify: the headline",
    ),
    Family(
        "verify --remedy conversation",
        "every strategy of the run against keeping everything, paired by turn (Wilcoxon)",
        CORRECTION,
    ),
    Family(
        "verify --remedy retry",
        "the share of requests answered, policy against none (Fisher's exact test)",
        None,
    ),
    Family(
        "verify --check",
        "the share of the user's own checks passed, B against A, paired by case "
        "(McNemar's exact test on the cases one arm passed and the other failed)",
        None,
    ),
    Family(
        "gates",
        "every --fail-if gate in every group of like requests both runs have, one-sided "
        "(Fisher's exact test on the counts above the pooled quantile)",
        CORRECTION,
    ),
    Family("vantage", "the nearest vantage against the next nearest", None),
    Family("watch", "the peak hours against the rest", None),
)
"""Which comparisons form a family, command by command."""

MIN_N: Final = 2
"""The fewest measured values on each side for a test: with one value there is no rank
to compare, so no p is given (the row is left out, or the answer says it cannot tell).
An interval of medians needs :data:`MIN_INTERVAL_N`."""

# --- Intervals ----------------------------------------------------------------------

CONFIDENCE: Final = CURVE_CONFIDENCE
"""The level of every interval latdoc prints (order statistics, bootstrap, Wilson and
the length curve's band). Defined in :mod:`latdoc.model` as ``CURVE_CONFIDENCE``
because the length curve's band is drawn there, and re-exported here."""

# QUANTILE_METHOD (imported above): how every percentile latdoc reads is interpolated
# between two ranks, defined in :mod:`latdoc.model.percentile` because the length
# curve's band is drawn there, and re-exported here.

MEDIAN_INTERVAL: Final = "order statistics"
"""Intervals of a median, and of the difference or ratio of two medians (every interval
of ``compare``, of an experiment's headline, keep-alive's saving and setup, the watch's
peak ÷ rest and the vantage margin), are read from the order statistics, not resampled:
a median's is the Hettmansperger–Sheather interval (the ranks the binomial gives,
interpolated between the two nearest the level), and two medians' are combined by MOVER
with Welch's degrees of freedom (:data:`MEDIAN_INTERVAL_DF`); a ratio is the difference
of the log medians. ``bench/coverage.py`` measured each at 93–97% from
:data:`MIN_INTERVAL_N` values a side, on lognormal latencies (σ 0.05 to 0.5) and on
mixes where a share of requests is 3× slower. The percentile bootstrap they replace
held 87% for one median of seven values, 88–92% where one side was far noisier than
the other, and 97–99% elsewhere (its bootstrap of a median is lumpy and too wide)."""

MEDIAN_INTERVAL_DF: Final = 2.0
"""The degrees of freedom of a median's interval, per √n of its sample, when two are
combined: each side's reach is read as a standard error through Student's t with this
× √n degrees of freedom, and the sum through the t of Welch–Satterthwaite's. The order
statistics' spread is itself a noisy estimate (its width varies as about √n spacings
do); 2 is what ``bench/coverage.py`` found to centre the coverage on 95% (1 gave 91–95%,
plain MOVER, with no such step, 95–98%)."""

MIN_INTERVAL_N: Final = 5
"""The fewest values on each side for an interval of a median (or of two medians' ratio
or difference): below it no interval is given, so no row is significant (a
comparison's row keeps its medians and p). At five the single median's interval is its
extremes (93.75% exactly); at four it is 87.5%, and no method ``bench/coverage.py`` tried
held 93% for two medians of three or four values (the percentile bootstrap of 3 vs 3 held
89–91%; keep-alive's saving from a diagnosis's 3 new and 4 reused connections 91%)."""

QUANTILE_INTERVAL: Final = "order statistics"
"""The interval of another quantile (a retry arm's end-to-end p95): the order statistics
whose binomial ranks miss it at most half of 1 − :data:`CONFIDENCE` on each side, each
moved towards the next rank inward by what its miss leaves (the exact ranks alone held
96–98%, these 95–96%). None is given where no rank bounds it (a p95 needs 72 values at
95%). The percentile bootstrap it replaces cannot reach past the largest value: it held
a p95 of 20 trials 66% of the time and of 50 trials 90%."""

MEAN_INTERVAL: Final = "student t"
"""The interval of a mean (a conversation strategy's mean saving per turn, paired by
turn): Student's t. It held 93–95.5% from 5 turns on, where the percentile bootstrap
held 86–92%; no interval of a mean holds a rare slow outlier that a few turns did not
meet (``bench/coverage.py``'s last conversation row)."""

BOOTSTRAP_METHOD: Final = "percentile"
"""``bootstrap_ci`` of any other statistic is a percentile bootstrap
(``scipy.stats.bootstrap``), each sample resampled on its own and seeded, so one sample
and seed give one interval. No interval latdoc's commands print is one: medians,
quantiles and means have theirs above (:data:`MEDIAN_INTERVAL`,
:data:`QUANTILE_INTERVAL`, :data:`MEAN_INTERVAL`); the length curve refits its own
(:data:`LENGTH_RESAMPLES`)."""

RESAMPLES: Final = 2000
"""Bootstrap resamples of ``bootstrap_ci``'s interval."""

LENGTH_RESAMPLES: Final = 400
"""Bootstrap resamples of the length curve's fit (each one a least-squares fit)."""

PROPORTION_INTERVAL: Final = "wilson"
"""The interval of a share (requests answered, the user's checks passed, the errors'
share): Wilson's score interval, which keeps its level near 0 and 1 where the normal
approximation does not. Over true rates drawn from 2% to 98% it held 95.0–95.8% of
10, 20 and 50 cases (``tests/unit/analysis/test_proportions.py``); at one fixed rate a
share of n cases has n + 1 outcomes, so it holds 90–98% depending on the rate."""

# --- What is too small to call ------------------------------------------------------

NEGLIGIBLE_MS: Final = 1.0
NEGLIGIBLE_SHARE: Final = 0.02
"""A difference below both :data:`NEGLIGIBLE_MS` and this share of A is no difference,
however significant: timer and event-loop noise of the measuring client alone is of
this order. One bar for a comparison's rows, an experiment's verdict and a
conversation strategy; compare used 0.1 ms with the same share, verify 1 ms."""

NOTICEABLE_FRACTION: Final = 0.10
"""A kind contributes, and gets remedies, only when it adds at least this share of the
typical request (and more than identical requests vary). A tenth is what people tell
apart between two waits of 0.5–5 s met on different occasions (the Weber fraction of
durations is 5–10% side by side, more across occasions). It was 0.05: against the
truth bank's counterfactual truth, which counts a cause from a tenth of the user's
request, kinds adding 5–10% were named where removing them saves no wait a user
would tell apart (a slow lookup weighed on a long request, a closing server on a
quick path): 80.4% → 84.0% of primary verdicts right on a draw it was tuned on."""

# --- Thresholds the rules and the features share --------------------------------------

KNEE_RATIO: Final = 1.5
KNEE_MIN_RISE_MS: Final = 100.0
"""TTFT p50 under load is a queue when it is at least :data:`KNEE_RATIO` × the p50
without load *and* at least this many ms above it: the queueing rule (concurrent
against sequential) and the knee of a load sweep (each level against the lowest)
read both. The knee used the ratio alone; a 1.5× rise of a 20 ms TTFT is the timer's
noise, not a queue a user waits in."""

HIGH_RTT_MS: Final = 100.0
"""A round trip (TCP connect) above this is a far region: the ``network_path`` rule
fires, and its "use the nearest region" remedy is given, from here. The remedy fired
from 60 ms, so a slow upload could bring a region advice the rule had not found."""

LOSSY_RETRANSMIT_SHARE: Final = 0.01
"""A path where more than this share of the client's data segments were retransmitted,
or of those it received arrived out of order (behind a lost one; ``TCP_INFO``), is
lossy: the ``network_path`` rule names it, and a stream's pause on a connection that
saw loss meanwhile is the path's, not the server's stall. A healthy path loses well
under a tenth of this; 1% loss already costs a Reno flow most of its rate at 100 ms RTT."""

LOSS_MIN_SEGMENTS: Final = 200
"""The fewest data segments counted in a direction before its share is read."""

TCP_MIN_RTO_MS: Final = 200.0
"""The shortest retransmission timeout of Linux's TCP (``TCP_RTO_MIN``): a segment lost
with nothing sent behind it costs at least this, or the path's smoothed round trip
plus four times its variance where that is longer (RFC 6298). On a lossy path such a
loss, which no counter on the client's side sees, lifts one request's first token by
that much: a rise under concurrency no larger is the path's recovery, not a queue."""

CLIENT_CPU_SHARE: Final = 0.9
"""A load level whose client process used at least this share of a core (its CPU time
over the level's wall time) was held back by its own CPU: the client shaped its numbers."""
CLIENT_LAG_MS: Final = 10.0
"""... so was one whose event loop ran late, or whose kernel-stamp reader read late, by
more than this at the p99 (at a token's gap the reader's lag loses stamps)."""
CLIENT_CPU_TARGET: Final = 0.6
"""The share of a core each process is sized for when the load is spread: headroom for
the bursts a mean hides."""

CLIENT_DELAY_MS: Final = 10.0
CLIENT_DELAY_STATISTIC: Final = "median"
"""The load generator's own delay before a request left (event loop busy, time before
the write) is noted on a level when its median over requests is above
:data:`CLIENT_DELAY_MS`: the generator falling behind its own schedule. (The ``client``
kind of a diagnosis is named past the reference profile's slow edge of healthy.) The
load report used a p95 of 5 ms or more before."""

PLATEAU_GROWTH: Final = 0.10
"""A load level whose requests/s grows less than this over the level before is the
plateau: more load buys no more work."""

GENERATOR_BEHIND_MS: Final = 20.0
"""A load level whose TTFT p99 from when its requests were due exceeds its p99 from their
send by more than this (and by more than :data:`GENERATOR_BEHIND_SHARE` of it), or
whose due-time TTFT misses the SLO that its send-time TTFT meets, was held back by the
generator's own queue, not the server: a user behind the generator waits that much
more (coordinated omission where it is left out)."""

GENERATOR_BEHIND_SHARE: Final = 0.1
"""… and by more than this share of the send-time p99: a gap the send-time tail's own
spread would hide is not the generator's."""

LITTLE_TOLERANCE: Final = 0.1
"""Little's law holds for a load level when its measured in-flight mean and its target
(the concurrency, or the asked rate × latency) differ by at most this share; beyond it
the client did not hold the load it meant to, or the window is too short."""

SLOW_SETUP_MS: Final = 200.0
"""The seed's step 1: a new connection's DNS + TCP + TLS above this, with a first byte
not far above it, makes the network the main bottleneck."""

SERVICE_RATIO: Final = 3.0
"""What "first byte ≫ network time" means: the first byte on a new connection at least
this many times its setup, so the setup is at most a third of the wait for it and the
rest (sending, the server's wait and its first token) at least twice the setup."""

MIN_KEEPALIVE_N: Final = 3
"""Requests on each side of keep-alive's saving: new connections and reused ones of the
same prompt length. With fewer, one request's luck is half the median. Its interval,
and with it a measured gain for the keep-alive remedy, needs :data:`MIN_INTERVAL_N`."""

PEAK_MIN_BUCKET_TTFTS: Final = 3
"""A clock bucket with fewer TTFTs has no median worth ranking for the peak."""

PEAK_MARGIN: Final = 0.2
"""A peak bucket's TTFT median is this share above the median of the bucket medians."""

PEAK_MIN_RATIO: Final = 1.0
"""A daily pattern is named only when the whole interval of peak ÷ rest is above this
(and p < :data:`ALPHA`): the peak is slower, not possibly the same."""

PEAK_PERMUTATIONS: Final = 1999
"""Shuffles of the TTFTs across the clock's buckets behind the peak's p-value, each
picking its own peak as the rule does: the smallest p it can give is 1/2000."""

PEAK_PERMUTATION_VALUES: Final = 100
"""The most TTFTs of one bucket the shuffles use (a random draw of them), so a watch of a
million requests is tested in the time of a small one."""


def queues_under_load(ratio: float, rise_ms: float) -> bool:
    """Whether TTFT under load, ``ratio`` × and ``rise_ms`` above TTFT without it, is a
    queue (:data:`KNEE_RATIO`, :data:`KNEE_MIN_RISE_MS`)."""
    return ratio >= KNEE_RATIO and rise_ms >= KNEE_MIN_RISE_MS


def negligible(difference_ms: float, a_ms: float) -> bool:
    """Whether a difference of ``difference_ms`` against A's ``a_ms`` is too small to call
    (:data:`NEGLIGIBLE_MS`, :data:`NEGLIGIBLE_SHARE`)."""
    return abs(difference_ms) < max(NEGLIGIBLE_MS, NEGLIGIBLE_SHARE * abs(a_ms))
