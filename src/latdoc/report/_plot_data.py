"""What the plots show, as plain numbers: phase segments, rows, points, tick labels.

Nothing here draws or imports the plotting library, so the choices the plots make
(which rows, which phases, which unit) are tested without drawing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from latdoc.records import RequestTrace, Sample, Step
from latdoc.report.names import format_ms, pick_unit

PHASES: tuple[tuple[str, str], ...] = (
    ("queue", "Pool queue"),
    ("client", "Client delay"),
    ("dns", "DNS"),
    ("connect", "TCP"),
    ("proxy_connect", "Proxy CONNECT"),
    ("tls", "TLS"),
    ("send", "Send"),
    ("wait", "Server wait"),
    ("first_token", "First token"),
    ("stream", "Streaming"),
)
"""Phase keys and their names, in the order a request passes them."""

MAX_ROWS = 60
"""The waterfall shows at most this many requests, evenly spread over the run."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One phase of one request, in ms from the request's start."""

    phase: str
    start_ms: float
    end_ms: float

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms


def phase_segments(trace: RequestTrace) -> list[Segment]:
    """The measured phases of a request, left to right; unmeasured phases are skipped.

    Each phase runs from the previous measured mark to its own (curl ``-w``
    semantics), so the segments tile the request from 0 to its last mark. The
    client's own delay shows where it happened: between the pool's grant and the
    request picking its connection up, and between the connection being ready and
    the first byte written.
    """
    before_setup = [("queue", trace.queue_done_ns)]
    if trace.pool_granted_ns is not None:
        before_setup = [("queue", trace.pool_granted_ns), ("client", trace.queue_done_ns)]
    marks = [
        *before_setup,
        ("dns", trace.dns_done_ns),
        ("connect", trace.connect_done_ns),
        ("proxy_connect", trace.proxy_connect_done_ns),
        ("tls", trace.tls_done_ns),
        ("client", trace.write_start_ns),
        ("send", trace.sent_ns),
        ("wait", trace.first_byte_ns),
        ("first_token", trace.first_token_ns),
        ("stream", trace.done_ns),
    ]
    segments: list[Segment] = []
    previous = 0.0
    for phase, mark in marks:
        if mark is None:
            continue
        end = mark / 1e6
        if end > previous:
            segments.append(Segment(phase, previous, end))
        previous = max(previous, end)
    return segments


def pick_rows(samples: Sequence[Sample], cap: int = MAX_ROWS) -> list[tuple[int, Sample]]:
    """At most ``cap`` samples with their 1-based positions, evenly spread over the run."""
    if len(samples) <= cap:
        return list(enumerate(samples, start=1))
    positions = sorted({round(i * (len(samples) - 1) / (cap - 1)) for i in range(cap)})
    return [(p + 1, samples[p]) for p in positions]


def row_label(position: int, sample: Sample) -> str:
    """``#7 length 2,048 tok``, ``#20 load ×8``; a failed request ends in ``✕ <error code>``."""
    label = f"#{position} {sample.step}"
    tokens = sample.trace.prompt_tokens or sample.target_prompt_tokens
    if sample.step == Step.LENGTH and tokens is not None:
        label += f" {tokens:,} tok"
    elif sample.concurrency > 1:
        label += f" ×{sample.concurrency}"
    if sample.trace.error is not None:
        label += f" ✕ {sample.trace.error.code}"
    return label


def length_points(samples: Sequence[Sample]) -> list[tuple[float, float]]:
    """(prompt tokens, TTFT ms) of each successful length-step request."""
    points: list[tuple[float, float]] = []
    for sample in samples:
        if sample.step != Step.LENGTH or not sample.trace.ok:
            continue
        tokens = sample.trace.prompt_tokens or sample.target_prompt_tokens
        ttft = sample.trace.ttft_ms
        if tokens is not None and ttft is not None:
            points.append((float(tokens), ttft))
    return points


def ttft_by_step(samples: Sequence[Sample]) -> dict[str, list[float]]:
    """TTFT in ms of every successful request, by step in the order steps first appear."""
    out: dict[str, list[float]] = {}
    for s in samples:
        if s.trace.ok and s.trace.ttft_ms is not None:
            out.setdefault(s.step, []).append(s.trace.ttft_ms)
    return out


def ttft_values(samples: Sequence[Sample]) -> list[float]:
    """TTFT of every successful request, in ms."""
    return [v for values in ttft_by_step(samples).values() for v in values]


def ms_unit(ticks: Sequence[float]) -> str:
    """One unit for a whole axis of durations in ms, chosen from its largest tick."""
    largest = max((abs(t) for t in ticks), default=0.0)
    return pick_unit(largest) if largest else "ms"


def ms_tick_label(value: float, unit: str) -> str:
    """``1.5 s``, ``20 ms``, ``250 µs``: a tick in the axis's unit without trailing zeros."""
    number, _, suffix = format_ms(value, unit).partition(" ")
    if unit == "ms":
        number = f"{value:.3f}"
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return f"{'0' if number == '-0' else number} {suffix}"


def ms_tick_labels(ticks: Sequence[float]) -> list[str]:
    """Tick labels for durations in ms, in one unit chosen from the largest tick."""
    unit = ms_unit(ticks)
    return [ms_tick_label(t, unit) for t in ticks]


def token_tick_label(value: float) -> str:
    """``512``, ``2K``, ``2.5K``, ``32K``: prompt lengths as people say them (2,048 is 2K)."""
    if abs(value) >= 1024 and value % 1024 == 0:
        return f"{value / 1024:g}K"
    if abs(value) >= 1000:
        return f"{value / 1000:g}K"
    return f"{value:g}"
