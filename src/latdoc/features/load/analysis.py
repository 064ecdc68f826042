"""A load sweep read level by level: latency percentiles, throughput, the knee, Little's law.

Each level of ``latdoc load`` is a :class:`LevelWindow` (what the client meant to
send and when) and the samples sent in it. The level's window runs from its start
to the moment it stopped sending: throughput counts the requests finished in it,
the achieved arrival rate those sent in it; requests that finish after it still
count in the latency percentiles.

- The **knee** is the first level whose server-side TTFT p50 (from the request
  reaching the wire, so the client's own delay cannot make one) is at least
  ``KNEE_RATIO`` times that of the lowest level and ``KNEE_MIN_RISE_MS`` above it
  (:func:`~latdoc.analysis.policy.queues_under_load`, which the queueing rule reads
  too): requests start to wait for the server. Traces without the wire mark fall
  back to TTFT from the request's start.
- The **throughput plateau** is the first level whose requests/s grows less than
  ``PLATEAU_GROWTH`` over the previous level's: more load buys no more work.
- **Little's law**: over a window, the mean number of requests in flight equals
  throughput × mean latency. Measured from the same traces the two sides agree up to
  edge effects, so the check holds the in-flight mean against the level's *target*:
  its concurrency (closed loop), or its asked rate × mean latency (open loop). A gap
  beyond ``LITTLE_TOLERANCE`` means the client did not hold the load it meant to,
  or the window was too short for its latency.
- **Goodput**: the requests per second (and the share) meeting every SLO.
- **The client's own limit** (:class:`ClientLoad`): the CPU the sending process used,
  how late its event loop and its kernel-stamp reader ran. Past ``CLIENT_CPU_SHARE`` of
  a core, or ``CLIENT_LAG_MS`` of lag at the p99, the client shaped the level's numbers
  (its TTFT, inter-token gaps and throughput carry its own waiting), and
  :func:`processes_for` says how many processes would hold the load.

A level cut short (an interrupted sweep, or a level the error budget stopped) is
kept and marked ``partial``; the knee and the plateau are found among the other levels.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from latdoc.analysis.policy import (
    CLIENT_CPU_SHARE,
    CLIENT_CPU_TARGET,
    CLIENT_LAG_MS,
    LITTLE_TOLERANCE,
    PLATEAU_GROWTH,
    queues_under_load,
)
from latdoc.analysis.stats import quantiles
from latdoc.records import RequestTrace, Sample, Step

SUSTAINED_SHARE = 0.9
"""An open-loop level sustained its rate when at least this share of the scheduled
arrivals were sent in the window ..."""
SUSTAINED_LATE_MS = 50.0
"""... and the median arrival left at most this late."""


@dataclass(frozen=True, slots=True)
class ClientLoad:
    """What sending one level cost the client process, measured while it ran."""

    cpu_share: float
    """The process's CPU time over the level's wall time: 1.0 is one core kept busy."""
    loop_lag_ms_p99: float | None
    """How late its event loop woke against a timer, p99; ``None`` without readings."""
    reader_lag_ms_p99: float | None
    """How late the kernel-stamp reader read a stamped segment, p99; ``None`` without
    kernel stamps."""
    processes: int = 1
    """Processes that sent the level; the figures are the busiest one's."""
    read_together: float | None = None
    """The share of the level's gaps between tokens whose two tokens carry one stamp:
    read together, so the later one's own arrival is lost. A reader that falls behind
    makes them (the kernel merges a segment into the unread one before it), and so does
    a server or proxy that writes several tokens at once: alone it names no one, and it
    is shown beside the reasons, not counted among them. ``None`` without two tokens."""

    def reasons(self) -> list[str]:
        """Why the client shaped the level's numbers; empty when it did not."""
        out: list[str] = []
        if self.cpu_share >= CLIENT_CPU_SHARE:
            out.append(f"the process used {self.cpu_share:.0%} of a core")
        if self.loop_lag_ms_p99 is not None and self.loop_lag_ms_p99 > CLIENT_LAG_MS:
            out.append(f"its event loop ran {self.loop_lag_ms_p99:.0f} ms late (p99)")
        if self.reader_lag_ms_p99 is not None and self.reader_lag_ms_p99 > CLIENT_LAG_MS:
            out.append(f"its kernel-stamp reader read {self.reader_lag_ms_p99:.0f} ms late (p99)")
        return out

    @property
    def saturated(self) -> bool:
        return bool(self.reasons())

    def document(self) -> dict[str, float | int | None]:
        return {"cpu_share": self.cpu_share, "loop_lag_ms_p99": self.loop_lag_ms_p99,
                "reader_lag_ms_p99": self.reader_lag_ms_p99,
                "processes": self.processes, "read_together": self.read_together}  # fmt: skip

    @classmethod
    def from_document(cls, raw: object) -> ClientLoad | None:
        """The load as :meth:`document` wrote it; ``None`` for anything else."""
        if not isinstance(raw, dict) or not isinstance(raw.get("cpu_share"), int | float):
            return None

        def number(key: str) -> float | None:
            value = raw.get(key)
            return float(value) if isinstance(value, int | float) else None

        processes = raw.get("processes")
        return cls(float(raw["cpu_share"]), number("loop_lag_ms_p99"),
                   number("reader_lag_ms_p99"),
                   processes if isinstance(processes, int) and processes > 0 else 1,
                   number("read_together"))  # fmt: skip


def busiest(loads: Iterable[ClientLoad | None], processes: int = 1) -> ClientLoad | None:
    """The busiest of several processes' (or rounds') loads, field by field."""
    known = [load for load in loads if load is not None]
    if not known:
        return None

    def worst(values: Iterable[float | None]) -> float | None:
        seen = [v for v in values if v is not None]
        return max(seen) if seen else None

    return ClientLoad(
        max(load.cpu_share for load in known),
        worst(load.loop_lag_ms_p99 for load in known),
        worst(load.reader_lag_ms_p99 for load in known),
        processes,
        worst(load.read_together for load in known),
    )


def processes_for(load: ClientLoad) -> int:
    """Processes that would hold what ``load.processes`` of them sent, each at
    ``CLIENT_CPU_TARGET`` of a core; at least one more than now when the client was
    saturated (a saturated share is a floor on the need, not the need)."""
    now = load.processes
    wanted = math.ceil(load.cpu_share * now / CLIENT_CPU_TARGET)
    return max(wanted, now + 1) if load.saturated else max(1, wanted)


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

    def met_by(self, t: RequestTrace) -> bool:
        """The request succeeded and met every objective set."""
        if not t.ok:
            return False
        if self.ttft_ms is not None and (t.ttft_ms is None or t.ttft_ms > self.ttft_ms):
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


def percentiles(values: Sequence[float | None]) -> Percentiles | None:
    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return None
    p50, p95, p99 = quantiles(data, (0.50, 0.95, 0.99))
    return Percentiles(float(p50), float(p95), float(p99), float(np.mean(data)))


def level_stats(window: LevelWindow, samples: Sequence[Sample], slo: Slo) -> LevelStats:
    """One level's numbers from the samples sent in it."""
    traces = [s.trace for s in samples]
    ok = [t for t in traces if t.ok]
    start, end = window.start_ns, window.end_ns
    sent_in = [t for t in traces if start <= t.t0_ns <= end]
    departed = sorted(
        (t for t in ok if t.done_ns is not None and t.t0_ns + t.done_ns <= end),
        key=lambda t: t.t0_ns + (t.done_ns or 0),
    )
    counted, seconds = _departures(departed, window)
    good_all = sum(1 for t in traces if slo.met_by(t)) if slo.any else None
    return LevelStats(
        window=window,
        requests=len(traces),
        failed=len(traces) - len(ok),
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
    )


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


def analyse_load(
    windows: Sequence[LevelWindow], samples: Sequence[Sample], slo: Slo | None = None
) -> LoadAnalysis:
    """Every level's numbers, then the knee and the plateau across them."""
    slo = slo or Slo()
    levels = []
    for w in windows:
        mine = [s for s in samples if s.step == w.step and s.concurrency == w.sample_concurrency]
        levels.append(level_stats(w, mine, slo))
    return LoadAnalysis(
        levels=tuple(levels),
        knee=find_knee(levels),
        plateau=find_plateau(levels),
        peak_requests_per_s=max((lv.requests_per_s for lv in levels), default=None),
        slo=slo,
    )


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


def find_knee(levels: Sequence[LevelStats]) -> LevelStats | None:
    """The first level whose server-side TTFT p50 queues against :func:`knee_base`'s
    (:func:`~latdoc.analysis.policy.queues_under_load`); a level cut short is never the
    knee."""
    measured = _measured(levels)
    if len(measured) < 2:
        return None
    base = measured[0][1]
    for lv, p in measured[1:]:
        if base.p50 > 0 and queues_under_load(p.p50 / base.p50, p.p50 - base.p50):
            return lv
    return None


def find_plateau(levels: Sequence[LevelStats]) -> LevelStats | None:
    whole = [lv for lv in levels if not lv.window.partial]
    for previous, lv in itertools.pairwise(whole):
        if previous.requests_per_s > 0 and lv.requests_per_s < previous.requests_per_s * (
            1 + PLATEAU_GROWTH
        ):
            return lv
    return None
