"""The diagnosis page's three plots as inline SVG: every request's phases as a
waterfall, time to first token against prompt length with the fitted curve, and the
histogram of time to first token by step. Each function returns the ``<svg>`` element
as text, or ``None`` when there is nothing to draw (the page then says so in words);
artists that tests and readers look for carry SVG ids (``wf-<row>-<phase>``,
``length-fit`` ...). Importing this module loads matplotlib: only the HTML renderer
imports it, when it renders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from latdoc.analysis.stats import quantile
from latdoc.model import LengthCurve
from latdoc.records import Sample
from latdoc.report._figure import (
    FG,
    MsFormatter,
    figure_svg,
    new_figure,
    plot_style,
    rows_on_a_time_axis,
)
from latdoc.report._plot_data import (
    MAX_ROWS,
    PHASES,
    length_points,
    phase_segments,
    pick_rows,
    row_label,
    token_tick_label,
    ttft_by_step,
)
from latdoc.report._theme import ERROR_COLOUR, PHASE_COLOURS, STEP_COLOURS
from latdoc.report.names import format_ms

_CURVE_POINTS = 80


def waterfall_svg(samples: Sequence[Sample], cap: int = MAX_ROWS) -> str | None:
    """Every request (up to ``cap``, evenly spread) as a bar of coloured phases, first at the
    top; a failed request gets a red band, a red ✕ where it stopped, and its error code."""
    rows = pick_rows(samples, cap)
    if not rows:
        return None
    segments = [phase_segments(sample.trace) for _, sample in rows]
    with plot_style():
        figure = new_figure(1.3 + 0.2 * len(rows))
        ax = figure.add_subplot()
        names = dict(PHASES)
        for phase, _ in PHASES:
            bars = [(r, s) for r, segs in enumerate(segments) for s in segs if s.phase == phase]
            if not bars:
                continue
            container = ax.barh(
                [r for r, _ in bars],
                [s.duration_ms for _, s in bars],
                left=[s.start_ms for _, s in bars],
                height=0.72,
                color=PHASE_COLOURS[phase],
                label=names[phase],
            )
            for patch, (r, _) in zip(container.patches, bars, strict=True):
                patch.set_gid(f"wf-{r}-{phase}")
        failed = [r for r, (_, sample) in enumerate(rows) if not sample.trace.ok]
        for r in failed:
            ax.axhspan(r - 0.5, r + 0.5, color=ERROR_COLOUR, alpha=0.13, lw=0, gid=f"wf-band-{r}")
            end = segments[r][-1].end_ms if segments[r] else 0.0
            ax.plot(
                [end], [r], marker="x", markersize=7, mew=2, color=ERROR_COLOUR, gid=f"wf-fail-{r}"
            )
        ax.set_yticks(range(len(rows)), [row_label(p, s) for p, s in rows], fontsize=8)
        for r in failed:
            ax.get_yticklabels()[r].set_color(ERROR_COLOUR)
        rows_on_a_time_axis(ax, len(rows))
        ax.set_xlabel("time from the start of each request")
        handles, labels = ax.get_legend_handles_labels()
        if failed:
            handles.append(Patch(color=ERROR_COLOUR, alpha=0.35))
            labels.append("✕ failed request")
        # Two rows read left to right in the order a request passes the phases; the
        # legend fills column by column, so interleave the first half with the second.
        columns = math.ceil(len(labels) / 2)
        order = [i + row * columns for i in range(columns) for row in (0, 1)]
        order = [i for i in order if i < len(labels)]
        figure.legend(
            [handles[i] for i in order],
            [labels[i] for i in order],
            loc="outside upper left",
            ncols=columns,
        )
        return figure_svg(figure, "Phases of each request", "waterfall")


def length_svg(samples: Sequence[Sample], curve: LengthCurve | None) -> str | None:
    """TTFT against prompt length on a log axis (the lengths grow geometrically): each
    request, the median at each length, the fitted curve and its 95% band."""
    points = length_points(samples)
    medians = list(curve.points) if curve is not None else []
    xs = [x for x, _ in points] + [float(p.prompt_tokens) for p in medians]
    if not xs:
        return None
    with plot_style():
        figure = new_figure(4.2)
        ax = figure.add_subplot()
        if points:
            ax.scatter(
                [x for x, _ in points],
                [y for _, y in points],
                s=22,
                color=STEP_COLOURS[0],
                alpha=0.6,
                linewidths=0,
                label="one request",
                gid="length-requests",
            )
        if medians:
            ax.scatter(
                [p.prompt_tokens for p in medians],
                [p.ttft_ms for p in medians],
                s=80,
                facecolors="none",
                edgecolors=FG,
                linewidths=1.6,
                label="median at a length",
                gid="length-medians",
            )
        lo, hi = max(min(xs), 1.0), max(max(xs), 1.0)
        if curve is not None:
            steps = _CURVE_POINTS if hi > lo else 1
            # Geometric steps: evenly spaced on the log axis the lengths are drawn on.
            fx = [lo * (hi / lo) ** (i / steps) for i in range(steps + 1)]
            band = curve.band_ms(fx)
            if band is not None:
                ax.fill_between(
                    fx,
                    band[0],
                    band[1],
                    color=ERROR_COLOUR,
                    alpha=0.18,
                    linewidth=0,
                    label="95% interval of the fit",
                    gid="length-band",
                )
            ax.plot(
                fx,
                [curve.predict_ms(x) for x in fx],
                color=ERROR_COLOUR,
                lw=2,
                label=f"fitted {_fit_formula(curve)}",
                gid="length-fit",
            )
        ax.set_ylim(bottom=0)
        ax.set_xscale("log")
        ax.set_xlim(lo / 1.25, hi * 1.25)
        ticks = sorted({float(p.prompt_tokens) for p in medians} or set(xs))
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: token_tick_label(x)))
        ax.yaxis.set_major_formatter(MsFormatter())
        ax.grid(True)
        ax.set_xlabel("prompt tokens")
        ax.set_ylabel("time to first token")
        ax.legend(loc="best")
        return figure_svg(figure, "Time to first token against prompt length", "length")


def _fit_formula(curve: LengthCurve) -> str:
    """``a + b·k + c·k²`` with the fitted numbers, k in thousands of prompt tokens."""
    formula = f"{format_ms(curve.a_ms)} + {format_ms(curve.b_ms_per_1k)}·k"
    if abs(curve.c_ms_per_1k2) >= 0.0005:  # shown as "0 µs" otherwise: the fit is linear
        sign = "−" if curve.c_ms_per_1k2 < 0 else "+"
        formula += f" {sign} {format_ms(abs(curve.c_ms_per_1k2))}·k²"
    return formula + " (k = 1K tokens)"


def histogram_edges(values: Sequence[float]) -> list[float]:
    """Round bin edges that cover every value, about 24 bins at most; a run of identical
    values still gets a bin of visible width, and durations never get a negative bin."""
    lo, hi = min(values), max(values)
    if hi - lo <= max(abs(hi), 1.0) * 1e-3:
        pad = max(abs(hi) * 0.05, 0.5)
        lo, hi = max(lo - pad, 0.0) if lo >= 0 else lo - pad, hi + pad
    bins = max(4, min(24, round(2 * math.sqrt(len(values)))))
    edges = [float(e) for e in MaxNLocator(nbins=bins).tick_values(lo, hi)]
    first = max(e for e in edges if e <= lo)
    last = min(e for e in edges if e >= hi)
    return [e for e in edges if first <= e <= last]


def ttft_histogram_svg(samples: Sequence[Sample]) -> str | None:
    """A histogram of TTFT over successful requests, stacked by step, with p50 and p95."""
    by_step = ttft_by_step(samples)
    values = sorted(v for vs in by_step.values() for v in vs)
    if not values:
        return None
    edges = histogram_edges(values)
    steps = list(by_step)
    with plot_style():
        figure = new_figure(3.6)
        ax = figure.add_subplot()
        _, _, containers = ax.hist(
            [by_step[s] for s in steps],
            bins=edges,
            stacked=True,
            color=[STEP_COLOURS[i % len(STEP_COLOURS)] for i in range(len(steps))],
            label=steps,
            edgecolor="none",
            rwidth=0.92,
        )
        for i, container in enumerate(_containers(containers)):
            for b, patch in enumerate(container.patches):
                patch.set_gid(f"hist-{i}-{b}")
        for name, q, colour in (("p50", 0.50, FG), ("p95", 0.95, ERROR_COLOUR)):
            value = quantile(values, q)
            ax.axvline(
                value, color=colour, lw=1.5, ls="--", label=f"{name} {format_ms(value)}",
                gid=f"ttft-{name}",
            )  # fmt: skip
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_formatter(MsFormatter())
        ax.grid(axis="y")
        ax.set_xlabel("time to first token")
        ax.set_ylabel("requests")
        ax.legend(loc="best")
        return figure_svg(figure, "Distribution of time to first token", "histogram")


def _containers(result: Any) -> list[Any]:
    """``hist`` returns one container for one data set and a list for several."""
    return list(result) if isinstance(result, list) else [result]
