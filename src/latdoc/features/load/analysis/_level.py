"""One level of a load sweep read from the samples sent in it: its window, its latency
percentiles, throughput and goodput, Little's law, and its failures by phase.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from latdoc.analysis.policy import LITTLE_TOLERANCE
from latdoc.analysis.stats import quantiles, steady_state
from latdoc.features.load.analysis._client import ClientLoad
from latdoc.model import CostSummary, Price, summarise_costs
from latdoc.records import RequestTrace, Sample, Step

SUSTAINED_SHARE = 0.9
"""An open-loop level sustained its rate when at least this share of the scheduled
arrivals were sent in the window ..."""
SUSTAINED_LATE_MS = 50.0
"""... and the median arrival left at most this late."""


@dataclass(frozen=True, slots=True)
class LevelWindow:
    """One level of a sweep as the client ran it. Times are ``perf_counter_ns``."""

    number: int
    """From 1, in the order the levels ran."""
    concurrency: int | None
    """Closed loop: the workers sending back to back."""
    rate: float | None
    """Open loop: the asked arrival rate, requests per second."""
    start_ns: int
    end_ns: int
    """When the level stopped sending (its duration, or an early stop)."""
    scheduled: int | None = None
    """Open loop: arrivals scheduled inside the window."""
    late_ms_p50: float | None = None
    """Open loop: how late arrivals left against their schedule, median."""
    unsent: int = 0
    """Open loop: arrivals due inside the window that the generator reached only after
    the window had ended (its event loop ran late, or every connection was busy), so
    were never sent. Counted in :attr:`scheduled`."""
    partial: bool = False
    """Cut short before it ended (Ctrl-C, the time budget, a lost worker, or the error
    budget stopping it): its finished requests are kept, but it is left out of the knee
    and the plateau."""
    client: ClientLoad | None = None
    """What sending it cost this process; ``None`` where it was not measured (sent from
    worker processes or Ray actors, or read from a store that did not keep it)."""

    @property
    def seconds(self) -> float:
        return max(1e-9, (self.end_ns - self.start_ns) / 1e9)

    @property
    def step(self) -> Step:
        return Step.LOAD if self.rate is None else Step.ARRIVALS

    @property
    def sample_concurrency(self) -> int:
        """The ``concurrency`` its samples carry: the workers, or the level's number."""
        return self.concurrency if self.concurrency is not None else self.number

    @property
    def label(self) -> str:
        if self.rate is not None:
            return f"{self.rate:g}/s"
        return str(self.concurrency)

    def document(self) -> dict[str, Any]:
        """The window as both the printed document and the stored record write it."""
        return {
            "number": self.number,
            "concurrency": self.concurrency,
            "rate": self.rate,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "scheduled": self.scheduled,
            "late_ms_p50": self.late_ms_p50,
            "unsent": self.unsent,
            "partial": self.partial,
            "client": None if self.client is None else self.client.document(),
        }


@dataclass(frozen=True, slots=True)
class Percentiles:
    p50: float
    p95: float
    p99: float
    mean: float


@dataclass(frozen=True, slots=True)
class Slo:
    """The objectives a request must meet to count as goodput: a TTFT and a TPOT limit
    in ms, each optional."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    from_send: bool = False
    """Judge TTFT from the request's send (what the server did; ``--slo-from send``),
    not from when it was due (what a user behind the generator waits)."""

    def met_by(self, t: RequestTrace, *, ttft_ms: float | None = None) -> bool:
        """The request succeeded and met every objective set, its TTFT from when it was
        due where it was (:attr:`from_send` otherwise); ``ttft_ms``: the time to first
        token judged where it is not the request's own (a user turn's wait, its tool
        calls in it)."""
        if not t.ok:
            return False
        due = None if self.from_send else t.due_ttft_ms
        first = ttft_ms if ttft_ms is not None else due if due is not None else t.ttft_ms
        if self.ttft_ms is not None and (first is None or first > self.ttft_ms):
            return False
        return self.tpot_ms is None or t.tpot_ms is None or t.tpot_ms <= self.tpot_ms

    @property
    def any(self) -> bool:
        return self.ttft_ms is not None or self.tpot_ms is not None


@dataclass(frozen=True, slots=True)
class LittlesLaw:
    """Requests in flight over a level's window, against what the level meant to hold."""

    in_flight: float
    """Mean requests in flight over the window, measured from the traces."""
    predicted: float
    """Throughput × mean latency, from the same traces (equal to ``in_flight`` up to
    edge effects: shown, not judged)."""
    target: float
    """What the level meant to hold: its concurrency, or its asked rate × mean latency."""

    @property
    def error(self) -> float:
        """Relative gap between the measured in-flight mean and the target."""
        return abs(self.in_flight - self.target) / max(self.target, 1e-9)

    @property
    def holds(self) -> bool:
        return self.error <= LITTLE_TOLERANCE


@dataclass(frozen=True, slots=True)
class Failure:
    """How many of a level's requests failed with one error code in one phase."""

    code: str
    """:attr:`~latdoc.errors.TraceError.code`: ``connect``, ``stream_broken``, ``http:503`` ..."""
    phase: str
    """The phase they failed in (:class:`~latdoc.errors.Phase`)."""
    count: int


def failures_by_phase(traces: Sequence[RequestTrace]) -> tuple[Failure, ...]:
    """The failed ``traces`` counted by error code and phase, most first."""
    counts = Counter((t.error.code, str(t.error.phase)) for t in traces if t.error is not None)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return tuple(Failure(code, phase, n) for (code, phase), n in ranked)


@dataclass(frozen=True, slots=True)
class LevelStats:
    window: LevelWindow
    requests: int
    failed: int
    ttft_ms: Percentiles | None
    tpot_ms: Percentiles | None
    total_ms: Percentiles | None
    pool_wait_ms: Percentiles | None
    """Client-side wait for a connection, not the server's time."""
    requests_per_s: float
    """Successful requests finished inside the window, per second (from the level's
    start to its last departure)."""
    output_tokens_per_s: float
    sent_per_s: float
    """Requests sent inside the window, per second: the achieved arrival rate."""
    little: LittlesLaw | None
    goodput_per_s: float | None
    goodput_share: float | None
    server_ttft_ms: Percentiles | None = None
    """TTFT from the request reaching the wire: the server's time, no client delay in it."""
    client_delay_ms: Percentiles | None = None
    """The client's own delay before each request left (event-loop lateness), not the
    server's time."""
    failures: tuple[Failure, ...] = ()
    """The failed requests by error code and the phase they failed in, most first."""
    cost: CostSummary | None = None
    """What the level's requests cost at the model's price; None without a price."""
    due_ttft_ms: Percentiles | None = None
    """TTFT from when each request was due (its arrival, or its stream's last request's
    end): what a user behind the generator waits, its own queue in it."""
    due_total_ms: Percentiles | None = None
    """End to end from when each request was due."""
    late_ms: Percentiles | None = None
    """How late each request left against when it was due: the generator's own queue."""
    warmup: int = 0
    """Successful requests at the level's start left out of its latency figures as its
    warm-up (MSER-5 on their TTFT in the order they finished)."""
    steady: bool | None = None
    """Whether the level reached a steady state in its duration; ``None`` where it
    finished too few requests to tell (under 50)."""
    warmup_ttft_ms: Percentiles | None = None
    """The warm-up's own TTFT, shown apart."""

    @property
    def server_side_ttft_ms(self) -> Percentiles | None:
        """Server TTFT where measured, else TTFT from the request's start."""
        return self.server_ttft_ms if self.server_ttft_ms is not None else self.ttft_ms

    @property
    def error_rate(self) -> float:
        return self.failed / self.requests if self.requests else 0.0

    @property
    def sustained(self) -> bool | None:
        """Open loop: did the client send at the asked rate? ``None`` for closed loop."""
        w = self.window
        if w.rate is None or w.scheduled is None:
            return None
        enough = round(self.sent_per_s * w.seconds) >= SUSTAINED_SHARE * w.scheduled
        on_time = w.late_ms_p50 is None or w.late_ms_p50 <= SUSTAINED_LATE_MS
        return enough and on_time


def percentiles(values: Sequence[float | None]) -> Percentiles | None:
    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return None
    p50, p95, p99 = quantiles(data, (0.50, 0.95, 0.99))
    return Percentiles(float(p50), float(p95), float(p99), float(np.mean(data)))


def level_stats(
    window: LevelWindow, samples: Sequence[Sample], slo: Slo, price: Price | None = None
) -> LevelStats:
    """One level's numbers from the samples sent in it, its cost at ``price``."""
    traces = [s.trace for s in samples]
    every_ok = [t for t in traces if t.ok]
    ok, warm, steady = _steady(every_ok)
    start, end = window.start_ns, window.end_ns
    sent_in = [t for t in traces if start <= t.t0_ns <= end]
    departed = sorted(
        (t for t in every_ok if t.done_ns is not None and t.t0_ns + t.done_ns <= end),
        key=lambda t: t.t0_ns + (t.done_ns or 0),
    )
    counted, seconds = _departures(departed, window)
    good_all = sum(1 for t in traces if slo.met_by(t)) if slo.any else None
    return LevelStats(
        window=window,
        requests=len(traces),
        failed=len(traces) - len(every_ok),
        ttft_ms=percentiles([t.ttft_ms for t in ok]),
        tpot_ms=percentiles([t.tpot_ms for t in ok]),
        total_ms=percentiles([t.total_ms for t in ok]),
        pool_wait_ms=percentiles([t.queue_ms for t in traces]),
        requests_per_s=len(counted) / seconds,
        output_tokens_per_s=sum(t.output_tokens or 0 for t in counted) / seconds,
        sent_per_s=len(sent_in) / window.seconds,
        little=_little(window, samples),
        goodput_per_s=(None if not slo.any else sum(1 for t in counted if slo.met_by(t)) / seconds),
        goodput_share=None if good_all is None else good_all / max(len(traces), 1),
        server_ttft_ms=percentiles([t.server_ttft_ms for t in ok]),
        client_delay_ms=percentiles([t.client_delay_ms for t in traces]),
        failures=failures_by_phase(traces),
        cost=None if price is None else summarise_costs(traces, price),
        due_ttft_ms=percentiles([t.due_ttft_ms for t in ok]),
        due_total_ms=percentiles([t.due_total_ms for t in ok]),
        late_ms=percentiles([t.late_ms for t in traces]),
        warmup=len(warm),
        steady=steady,
        warmup_ttft_ms=percentiles([t.ttft_ms for t in warm]),
    )


def _steady(
    ok: list[RequestTrace],
) -> tuple[list[RequestTrace], list[RequestTrace], bool | None]:
    """The level's successful requests past its warm-up, the warm-up's, and whether it
    settled: MSER-5 (:func:`~latdoc.analysis.stats.steady_state`) on their TTFT in the
    order they finished, the order the server served them in."""
    done = sorted(
        (t for t in ok if t.done_ns is not None and t.ttft_ms is not None),
        key=lambda t: t.t0_ns + (t.done_ns or 0),
    )
    found = steady_state([t.ttft_ms or 0.0 for t in done])
    if found is None or not found.warmup:
        return ok, [], None if found is None else found.reached
    warm = done[: found.warmup]
    left_out = {id(t) for t in warm}
    return [t for t in ok if id(t) not in left_out], warm, True


def _departures(
    departed: Sequence[RequestTrace], window: LevelWindow
) -> tuple[Sequence[RequestTrace], float]:
    """The departures to count and the time they took: from the level's start to the
    last departure in its window.

    Not over the whole window: a level of a few request times holds a whole number
    of rounds per stream, and the time after the last departure would make the rate
    jump with where the rounds fall. Not from the first departure either: a server
    with slots lets requests go in batches, and the first batch would be miscounted.
    """
    if not departed:
        return departed, window.seconds
    last = departed[-1].t0_ns + (departed[-1].done_ns or 0)
    return departed, max(1e-9, (last - window.start_ns) / 1e9)


def _little(window: LevelWindow, samples: Sequence[Sample]) -> LittlesLaw | None:
    """Time in flight inside the window against the level's target (and, shown beside
    it, throughput × mean latency).

    Throughput is the mean of arrivals and departures in the window: counting only
    arrivals overstates it by the requests still open at the window's end, counting
    only departures understates it by as many, and their mean cancels that edge to
    first order, so a short level is not mistaken for a broken law.
    """
    start, end = window.start_ns, window.end_ns
    busy_ns = 0
    latencies: list[float] = []
    arrived = departed = 0
    for s in samples:
        t = s.trace
        if t.done_ns is None or not start <= t.t0_ns <= end:
            continue
        finish = t.t0_ns + t.done_ns
        busy_ns += max(0, min(finish, end) - t.t0_ns)
        latencies.append(t.done_ns / 1e9)
        arrived += 1
        departed += 1 if finish <= end else 0
    if not latencies:
        return None
    seconds = window.seconds
    in_flight = busy_ns / 1e9 / seconds
    latency = float(np.mean(latencies))
    predicted = (arrived + departed) / 2 / seconds * latency
    if window.concurrency is not None:
        target = float(window.concurrency)
    elif window.rate is not None:
        target = window.rate * latency
    else:
        return None
    return LittlesLaw(in_flight, predicted, target)
