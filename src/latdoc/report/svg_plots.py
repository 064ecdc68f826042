"""Two plots of time to first token: against prompt length, and as a histogram.

Each function returns an ``<svg>`` string, or ``None`` when there is nothing to
draw (the page then says so in words instead).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from latdoc.analysis.diagnosis import LengthCurve
from latdoc.analysis.stats import quantile
from latdoc.records import Sample
from latdoc.report.probe_text import format_ms
from latdoc.report.svg import (
    Frame,
    Scale,
    circle,
    legend,
    line,
    ms_scale_ticks,
    ms_tick_labels,
    nice_step,
    nice_ticks,
    polyline,
    rect,
    svg_doc,
    text,
    token_tick_label,
    x_axis,
    y_axis,
)

_WIDTH = 900.0
_CURVE_POINTS = 80
STEP_CLASSES = 6
"""Steps are coloured ``st-0`` … ``st-5`` in the order they first appear."""


def length_points(samples: Sequence[Sample]) -> list[tuple[float, float, Sample]]:
    """(prompt tokens, TTFT ms, sample) for each successful length-step request."""
    points: list[tuple[float, float, Sample]] = []
    for sample in samples:
        if sample.step != "length" or not sample.trace.ok:
            continue
        tokens = sample.trace.prompt_tokens or sample.target_prompt_tokens
        ttft = sample.trace.ttft_ms
        if tokens is not None and ttft is not None:
            points.append((float(tokens), ttft, sample))
    return points


def length_svg(samples: Sequence[Sample], curve: LengthCurve | None) -> str | None:
    """TTFT against prompt length: each request, the medians, and the fitted curve."""
    points = length_points(samples)
    medians = list(curve.points) if curve is not None else []
    xs = [x for x, _, _ in points] + [float(p.prompt_tokens) for p in medians]
    if not xs:
        return None
    ys = [y for _, y, _ in points] + [p.ttft_ms for p in medians]
    fitted: list[tuple[float, float]] = []
    if curve is not None:
        lo, hi = min(xs), max(xs)
        steps = _CURVE_POINTS if hi > lo else 1
        fitted = [
            (lo + (hi - lo) * i / steps, curve.predict_ms(lo + (hi - lo) * i / steps))
            for i in range(steps + 1)
        ]
        ys += [y for _, y in fitted]

    x_ticks = nice_ticks(0.0, max(xs), 6)
    y_ticks, y_labels = ms_scale_ticks(max(max(ys), 0.0), 5)
    entries = [("pt-request", "one request"), ("pt-median", "median at a length")]
    if fitted:
        entries.append(("fit-swatch", "fitted a + b·k + c·k²"))
    legend_parts, legend_height = legend(90, 16, entries, width=_WIDTH - 120)
    frame = Frame(_WIDTH, 16 + legend_height + 300 + 46, 90, 24, 16 + legend_height + 8, 46)
    x_scale = Scale(x_ticks[0], x_ticks[-1], frame.x0, frame.x1)
    y_scale = Scale(y_ticks[0], y_ticks[-1], frame.y0, frame.y1)

    parts = [*legend_parts]
    parts += x_axis(
        frame,
        x_scale,
        x_ticks,
        [token_tick_label(t) for t in x_ticks],
        title="prompt tokens",
    )
    parts += y_axis(frame, y_scale, y_ticks, y_labels, title="time to first token")
    if fitted:
        visible = [(x_scale(x), y_scale(min(y, y_ticks[-1]))) for x, y in fitted]
        parts.append(polyline(visible, css_class="fit"))
    for x, y, sample in points:
        title = f"{int(x):,} prompt tokens · TTFT {format_ms(y)}"
        if sample.target_prompt_tokens is not None:
            title += f" (asked for {sample.target_prompt_tokens:,})"
        parts.append(circle(x_scale(x), y_scale(y), 3.5, css_class="pt-request", title=title))
    for point in medians:
        title = f"median of {point.n} at {point.prompt_tokens:,} tokens: {format_ms(point.ttft_ms)}"
        parts.append(
            circle(
                x_scale(point.prompt_tokens),
                y_scale(point.ttft_ms),
                6,
                css_class="pt-median",
                title=title,
            )
        )
    return svg_doc(frame, parts, label="Time to first token against prompt length")


def ttft_values(samples: Sequence[Sample]) -> list[float]:
    """TTFT of every successful request, in ms."""
    return [s.trace.ttft_ms for s in samples if s.trace.ok and s.trace.ttft_ms is not None]


def _count_ticks(largest: int) -> list[float]:
    raw = max(largest, 1) / 4
    magnitude = 10 ** max(0, math.floor(math.log10(raw))) if raw >= 1 else 1
    step = next(f * magnitude for f in (1, 2, 5, 10) if f * magnitude >= raw)
    return [float(i * step) for i in range(math.ceil(max(largest, 1) / step) + 1)]


def ttft_histogram_svg(samples: Sequence[Sample]) -> str | None:
    """A histogram of TTFT over successful requests, stacked by step, with p50 and p95."""
    values = ttft_values(samples)
    if not values:
        return None
    ordered = sorted(values)
    lo, hi = ordered[0], ordered[-1]
    width = nice_step(hi - lo, 24) if hi > lo else max(nice_step(hi or 1.0, 10), 1e-3)
    start = math.floor(lo / width) * width
    bins = max(1, math.ceil((hi - start) / width + 1e-9))
    if start + bins * width <= hi:
        bins += 1

    steps: list[str] = []
    counts: dict[str, list[int]] = {}
    for sample in samples:
        ttft = sample.trace.ttft_ms
        if not sample.trace.ok or ttft is None:
            continue
        if sample.step not in counts:
            steps.append(sample.step)
            counts[sample.step] = [0] * bins
        counts[sample.step][min(int((ttft - start) / width), bins - 1)] += 1
    totals = [sum(counts[step][b] for step in steps) for b in range(bins)]

    step_class = {step: f"st-{i % STEP_CLASSES}" for i, step in enumerate(steps)}
    legend_parts, legend_height = legend(
        70, 16, [(step_class[s], s) for s in steps], width=_WIDTH - 100
    )
    frame = Frame(_WIDTH, 16 + legend_height + 260 + 46, 70, 24, 16 + legend_height + 22, 46)
    end = start + bins * width
    x_ticks = nice_ticks(start if start > end / 2 else 0.0, end, 8)
    x_labels = ms_tick_labels(x_ticks)
    x_scale = Scale(x_ticks[0], x_ticks[-1], frame.x0, frame.x1)
    y_ticks = _count_ticks(max(totals))
    y_scale = Scale(0.0, y_ticks[-1], frame.y0, frame.y1)

    parts = [*legend_parts]
    parts += x_axis(frame, x_scale, x_ticks, x_labels, title="time to first token", grid=False)
    parts += y_axis(frame, y_scale, y_ticks, [f"{t:.0f}" for t in y_ticks], title="requests")
    for b in range(bins):
        left = start + b * width
        x = x_scale(left)
        bar_width = max(x_scale.length(width) - 1.0, 0.5)
        stacked = 0
        for step in steps:
            count = counts[step][b]
            if not count:
                continue
            y_top = y_scale(stacked + count)
            title = f"{step}: {count} between {format_ms(left)} and {format_ms(left + width)}"
            parts.append(
                rect(
                    x + 0.5,
                    y_top,
                    bar_width,
                    y_scale(stacked) - y_top,
                    css_class=f"bar {step_class[step]}",
                    title=title,
                )
            )
            stacked += count
    for name, q in (("p50", 0.50), ("p95", 0.95)):
        value = quantile(ordered, q)
        x = x_scale(value)
        parts.append(line(x, frame.y1 - 4, x, frame.y0, css_class=f"marker {name}"))
        anchor = "end" if x > frame.x1 - 80 else "start"
        offset = -4 if anchor == "end" else 4
        label = f"{name} {format_ms(value)}"
        y_label = frame.y1 - 6 if name == "p50" else frame.y1 + 10
        parts.append(
            text(x + offset, y_label, label, css_class=f"marker-label {name}", anchor=anchor)
        )
    return svg_doc(frame, parts, label="Distribution of time to first token")
