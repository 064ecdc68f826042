"""The per-request phase waterfall: one horizontal bar per request, one segment per phase.

Segments follow the trace's cumulative marks (curl ``-w`` semantics): each phase
runs from the previous measured mark to its own, so a bar's x is milliseconds
from the start of that request and each segment's width is the phase duration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from latdoc.records import RequestTrace, Sample
from latdoc.report.probe_text import format_ms
from latdoc.report.svg import (
    Frame,
    Scale,
    esc,
    legend,
    line,
    ms_scale_ticks,
    num,
    rect,
    svg_doc,
    text,
    x_axis,
)

PHASES: tuple[tuple[str, str], ...] = (
    ("queue", "Pool queue"),
    ("dns", "DNS"),
    ("connect", "TCP"),
    ("tls", "TLS"),
    ("send", "Send"),
    ("wait", "Server wait"),
    ("first_token", "First token"),
    ("stream", "Streaming"),
)
"""Phase keys (CSS class ``ph-<key>``) and their names, in the order a request passes them."""

MAX_ROWS = 60
_ROW = 16.0
_BAR = 11.0
_WIDTH = 900.0
_LEFT = 150.0
_RIGHT = 120.0


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
    """The measured phases of a request, left to right; unmeasured phases are skipped."""
    marks = (
        trace.queue_done_ns,
        trace.dns_done_ns,
        trace.connect_done_ns,
        trace.tls_done_ns,
        trace.sent_ns,
        trace.first_byte_ns,
        trace.first_token_ns,
        trace.done_ns,
    )
    segments: list[Segment] = []
    previous = 0.0
    for (phase, _), mark in zip(PHASES, marks, strict=True):
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


def _row_label(position: int, sample: Sample) -> str:
    label = f"#{position} {sample.step}"
    tokens = sample.trace.prompt_tokens or sample.target_prompt_tokens
    if sample.step == "length" and tokens is not None:
        label += f" {tokens:,} tok"
    elif sample.concurrency > 1:
        label += f" ×{sample.concurrency}"
    return label


def _row_title(position: int, sample: Sample, segments: Sequence[Segment]) -> str:
    names = dict(PHASES)
    trace = sample.trace
    parts = [_row_label(position, sample)]
    if trace.new_connection is not None:
        parts.append("new connection" if trace.new_connection else "reused connection")
    parts += [f"{names[s.phase]} {format_ms(s.duration_ms)}" for s in segments]
    parts.append(f"TTFT {format_ms(trace.ttft_ms)}")
    parts.append(f"total {format_ms(trace.total_ms)}")
    if trace.error is not None:
        parts.append(f"failed: {trace.error}")
    return " · ".join(parts)


def waterfall_svg(samples: Sequence[Sample], cap: int = MAX_ROWS) -> str:
    """Every request (up to ``cap``) as a bar of coloured phases; failed ones marked ✕."""
    rows = pick_rows(samples, cap)
    segments = [phase_segments(s.trace) for _, s in rows]
    ends = [seg[-1].end_ms for seg in segments if seg]
    ticks, labels = ms_scale_ticks(max(ends, default=1.0), 8)

    legend_parts, legend_height = legend(
        _LEFT, 16, [(f"ph-{key}", name) for key, name in PHASES], width=_WIDTH - _LEFT - _RIGHT
    )
    legend_parts.append(rect(_LEFT, 16 + legend_height - 10, 12, 12, css_class="fail-band"))
    legend_parts.append(
        text(_LEFT + 17, 16 + legend_height, "✕ failed request", css_class="legend fail")
    )
    top = 16 + legend_height + 16
    frame = Frame(_WIDTH, top + len(rows) * _ROW + 44, _LEFT, _RIGHT, top, 44)
    scale = Scale(0.0, ticks[-1], frame.x0, frame.x1)

    parts = [*legend_parts, *x_axis(frame, scale, ticks, labels, title="time from request start")]
    if len(rows) < len(samples):
        shown = f"{len(rows)} of {len(samples)} requests shown, evenly spaced; "
        shown += f"{len(samples) - len(rows)} left out"
        parts.append(text(frame.x1, 16 + legend_height, shown, css_class="note", anchor="end"))
    for row, ((position, sample), row_segments) in enumerate(zip(rows, segments, strict=True)):
        y = frame.y1 + row * _ROW
        parts.append(_row(position, sample, row_segments, y=y, scale=scale, frame=frame, row=row))
    return svg_doc(frame, parts, label="Per-request phase waterfall", css_class="plot waterfall")


def _row(
    position: int,
    sample: Sample,
    segments: Sequence[Segment],
    *,
    y: float,
    scale: Scale,
    frame: Frame,
    row: int,
) -> str:
    failed = sample.trace.error is not None
    bar_y = y + (_ROW - _BAR) / 2
    title = esc(_row_title(position, sample, segments))
    parts = [f'<g class="row" data-row="{row}"><title>{title}</title>']
    if failed:
        parts.append(rect(0, y, frame.width, _ROW, css_class="fail-band"))
    label_class = "row-label fail" if failed else "row-label"
    label = _row_label(position, sample) + (" ✕" if failed else "")
    parts.append(text(frame.x0 - 8, y + _ROW / 2 + 4, label, css_class=label_class, anchor="end"))
    for seg in segments:
        parts.append(
            rect(
                scale(seg.start_ms),
                bar_y,
                scale.length(seg.duration_ms),
                _BAR,
                css_class=f"seg ph-{seg.phase}",
                data={"phase": seg.phase, "ms": num(seg.duration_ms)},
            )
        )
    end_x = scale(segments[-1].end_ms) if segments else frame.x0
    if failed and sample.trace.error is not None:
        parts.append(line(end_x, bar_y - 1, end_x, bar_y + _BAR + 1, css_class="fail-mark"))
        parts.append(
            text(end_x + 4, y + _ROW / 2 + 4, f"✕ {sample.trace.error.code}", css_class="fail")
        )
    parts.append("</g>")
    return "".join(parts)
