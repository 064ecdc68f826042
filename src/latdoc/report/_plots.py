"""The report's three plots as inline SVG, drawn by matplotlib's SVG backend.

Each function returns the ``<svg>`` element as text, or ``None`` when there is
nothing to draw (the page then says so in words). Figures are built on
``matplotlib.figure.Figure`` with the SVG canvas: no pyplot, no global figure
state. Text is drawn as paths, so a plot looks the same on every machine with no
font to fetch. Axis and label colours are CSS variables of the page, so the
plots follow its light or dark scheme. Artists that tests and readers look
for carry SVG ids (``wf-<row>-<phase>``, ``length-fit`` ...).

Importing this module loads matplotlib: only the HTML renderer imports it,
when it renders.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import matplotlib
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, Formatter, FuncFormatter, MaxNLocator, NullLocator
from matplotlib.typing import RcKeyType

from latdoc.analysis.diagnosis import LengthCurve
from latdoc.analysis.stats import quantile
from latdoc.records import Sample
from latdoc.report._plot_data import (
    MAX_ROWS,
    PHASES,
    length_points,
    ms_tick_label,
    ms_unit,
    phase_segments,
    pick_rows,
    row_label,
    token_tick_label,
    ttft_by_step,
)
from latdoc.report._theme import ERROR_COLOUR, PHASE_COLOURS, STEP_COLOURS
from latdoc.report.names import format_ms

# Stand-in colours that no plot uses otherwise; after drawing they become the
# page's CSS variables, so text and axes follow its light or dark scheme.
_FG, _MUTED, _GRID = "#010203", "#040506", "#070809"
_CSS_COLOURS = {_FG: "var(--fg)", _MUTED: "var(--muted)", _GRID: "var(--grid)"}

_STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "path",
    "svg.hashsalt": "latdoc",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "text.color": _FG,
    "axes.labelcolor": _FG,
    "axes.edgecolor": _MUTED,
    "axes.facecolor": "none",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.axisbelow": True,
    "xtick.color": _MUTED,
    "ytick.color": _MUTED,
    "xtick.labelcolor": _FG,
    "ytick.labelcolor": _FG,
    "grid.color": _GRID,
    "grid.linewidth": 0.8,
    "figure.facecolor": "none",
    "savefig.facecolor": "none",
    "savefig.edgecolor": "none",
    "legend.frameon": False,
}
_WIDTH_IN = 9.0
_CURVE_POINTS = 80


@contextmanager
def _style() -> Iterator[None]:
    """matplotlib's defaults plus ours, whatever the user's matplotlibrc says; restored after."""
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(_STYLE)
        yield


def _new_figure(height_in: float) -> Figure:
    figure = Figure(figsize=(_WIDTH_IN, height_in), layout="constrained")
    FigureCanvasSVG(figure)
    return figure


def _svg(figure: Figure, label: str, css_class: str) -> str:
    """The figure as an ``<svg>`` element to inline in the page: no XML prologue, no
    metadata, colours as the page's variables, scaled by its viewBox."""
    buffer = io.StringIO()
    figure.savefig(
        buffer,
        format="svg",
        metadata={"Creator": None, "Date": None, "Format": None, "Type": None},
    )
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    for colour, variable in _CSS_COLOURS.items():
        text = text.replace(colour, variable)
    text = re.sub(r'(<svg[^>]*?) width="[^"]*" height="[^"]*"', r"\1", text, count=1)
    label = label.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    return text.replace(
        "<svg ", f'<svg class="plot {css_class}" role="img" aria-label="{label}" ', 1
    )


class _MsFormatter(Formatter):
    """Duration ticks in one unit per axis (``0 s, 0.5 s, 1 s``), chosen from the largest."""

    unit = "ms"

    def set_locs(self, locs: Any) -> None:
        super().set_locs(locs)
        self.unit = ms_unit([float(v) for v in locs])

    def __call__(self, x: float, pos: int | None = None) -> str:
        return ms_tick_label(x, self.unit)


def waterfall_svg(samples: Sequence[Sample], cap: int = MAX_ROWS) -> str | None:
    """Every request (up to ``cap``, evenly spread) as a bar of coloured phases, first at the
    top; a failed request gets a red band, a red ✕ where it stopped, and its error code."""
    rows = pick_rows(samples, cap)
    if not rows:
        return None
    segments = [phase_segments(sample.trace) for _, sample in rows]
    with _style():
        figure = _new_figure(1.3 + 0.2 * len(rows))
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
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlim(left=0)
        ax.xaxis.set_major_formatter(_MsFormatter())
        ax.grid(axis="x")
        ax.tick_params(axis="y", length=0)
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
        return _svg(figure, "Phases of each request", "waterfall")


def length_svg(samples: Sequence[Sample], curve: LengthCurve | None) -> str | None:
    """TTFT against prompt length on a log axis (the lengths grow geometrically): each
    request, the median at each length, the fitted curve and its 95% band."""
    points = length_points(samples)
    medians = list(curve.points) if curve is not None else []
    xs = [x for x, _ in points] + [float(p.prompt_tokens) for p in medians]
    if not xs:
        return None
    with _style():
        figure = _new_figure(4.2)
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
                edgecolors=_FG,
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
        ax.yaxis.set_major_formatter(_MsFormatter())
        ax.grid(True)
        ax.set_xlabel("prompt tokens")
        ax.set_ylabel("time to first token")
        ax.legend(loc="best")
        return _svg(figure, "Time to first token against prompt length", "length")


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
    with _style():
        figure = _new_figure(3.6)
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
        for name, q, colour in (("p50", 0.50, _FG), ("p95", 0.95, ERROR_COLOUR)):
            value = quantile(values, q)
            ax.axvline(
                value, color=colour, lw=1.5, ls="--", label=f"{name} {format_ms(value)}",
                gid=f"ttft-{name}",
            )  # fmt: skip
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_formatter(_MsFormatter())
        ax.grid(axis="y")
        ax.set_xlabel("time to first token")
        ax.set_ylabel("requests")
        ax.legend(loc="best")
        return _svg(figure, "Distribution of time to first token", "histogram")


def _containers(result: Any) -> list[Any]:
    """``hist`` returns one container for one data set and a list for several."""
    return list(result) if isinstance(result, list) else [result]


def conversation_svg(series: Sequence[tuple[str, Sequence[float | None]]]) -> str | None:
    """Time to first token by turn, one line per strategy (``keep`` first)."""
    if not any(v is not None for _, values in series for v in values):
        return None
    with _style():
        figure = _new_figure(3.4)
        ax = figure.add_subplot()
        for k, (name, values) in enumerate(series):
            turns = [t + 1 for t, v in enumerate(values) if v is not None]
            ttft = [v for v in values if v is not None]
            (line,) = ax.plot(
                turns, ttft, marker="o", markersize=3, linewidth=1.6, label=name,
                color=_SERIES_COLOURS[k % len(_SERIES_COLOURS)],
            )  # fmt: skip
            line.set_gid(f"conversation-{k}")
        ax.set_xlabel("turn")
        ax.set_ylabel("time to first token")
        ax.yaxis.set_major_formatter(_MsFormatter())
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", frameon=False)
        return _svg(figure, "Time to first token by turn, per strategy", "conversation")


_SERIES_COLOURS = ("#d64545", "#3b7dd8", "#2e9e5b", "#a05ad0", "#e08a1e", "#4a4f57")


def load_ttft_svg(
    levels: Sequence[str],
    ttft_ms: Sequence[tuple[float, float] | None],
    knee: int | None,
    axis: str = "load level",
) -> str | None:
    """TTFT p50 and p95 by load level, the knee marked."""
    points = [(k, v) for k, v in enumerate(ttft_ms) if v is not None]
    if not points:
        return None
    with _style():
        figure = _new_figure(3.2)
        ax = figure.add_subplot()
        xs = [k for k, _ in points]
        (p50,) = ax.plot(
            xs, [v[0] for _, v in points], marker="o", markersize=3, linewidth=1.6,
            label="p50", color=_SERIES_COLOURS[1],
        )  # fmt: skip
        p50.set_gid("load-ttft-p50")
        (p95,) = ax.plot(
            xs, [v[1] for _, v in points], marker="o", markersize=3, linewidth=1.2,
            linestyle="--", label="p95", color=_SERIES_COLOURS[0],
        )  # fmt: skip
        p95.set_gid("load-ttft-p95")
        if knee is not None:
            mark = ax.axvline(knee, color=_MUTED, linestyle=":", linewidth=1.2)
            mark.set_gid("load-knee")
            ax.annotate(
                f"knee at {levels[knee]}", (knee, 1.0), xycoords=("data", "axes fraction"),
                xytext=(4, -12), textcoords="offset points", color=_FG,
            )  # fmt: skip
        ax.set_xticks(range(len(levels)), list(levels))
        ax.set_xlabel(axis)
        ax.set_ylabel("time to first token")
        ax.yaxis.set_major_formatter(_MsFormatter())
        ax.set_ylim(bottom=0)
        ax.grid(axis="y")
        ax.legend(loc="upper left", frameon=False)
        return _svg(figure, "Time to first token p50 and p95 by load level", "load-ttft")


def load_throughput_svg(
    levels: Sequence[str],
    requests_per_s: Sequence[float],
    goodput_per_s: Sequence[float | None],
    plateau: int | None,
    axis: str = "load level",
) -> str | None:
    """Requests per second by load level, the plateau marked, and goodput when an SLO
    was given."""
    if not levels:
        return None
    with _style():
        figure = _new_figure(3.2)
        ax = figure.add_subplot()
        xs = list(range(len(levels)))
        (line,) = ax.plot(
            xs, list(requests_per_s), marker="o", markersize=3, linewidth=1.6,
            label="requests/s", color=_SERIES_COLOURS[2],
        )  # fmt: skip
        line.set_gid("load-throughput")
        good = [(k, v) for k, v in enumerate(goodput_per_s) if v is not None]
        if good:
            (g,) = ax.plot(
                [k for k, _ in good], [v for _, v in good], marker="o", markersize=3,
                linewidth=1.2, linestyle="--", label="goodput/s", color=_SERIES_COLOURS[3],
            )  # fmt: skip
            g.set_gid("load-goodput")
        if plateau is not None:
            mark = ax.axvline(plateau, color=_MUTED, linestyle=":", linewidth=1.2)
            mark.set_gid("load-plateau")
            ax.annotate(
                f"plateau at {levels[plateau]}", (plateau, 1.0),
                xycoords=("data", "axes fraction"), xytext=(4, -12),
                textcoords="offset points", color=_FG,
            )  # fmt: skip
        ax.set_xticks(xs, list(levels))
        ax.set_xlabel(axis)
        ax.set_ylabel("requests per second")
        ax.set_ylim(bottom=0)
        ax.grid(axis="y")
        ax.legend(loc="upper left", frameon=False)
        return _svg(figure, "Requests per second by load level", "load-throughput")


def clock_heatmap_svg(
    labels: Sequence[str], rows: Sequence[tuple[str, Sequence[float | None]]]
) -> str | None:
    """A heat map: one column per bucket, one row per metric, each row coloured on its own
    scale (cells labelled with their value when they are few enough to read); empty
    buckets are left blank, a row with one value throughout stays pale."""
    if not labels or not any(v is not None for _, values in rows for v in values):
        return None
    import numpy as np

    with _style():
        figure = _new_figure(0.6 + 0.55 * len(rows))
        ax = figure.add_subplot()
        for r, (name, values) in enumerate(rows):
            data = np.array([np.nan if v is None else v for v in values], dtype=float)
            measured = data[~np.isnan(data)]
            if measured.size == 0:
                continue
            low, high = float(measured.min()), float(measured.max())
            scaled = (
                (data - low) / (high - low) if high > low else np.where(np.isnan(data), data, 0.0)
            )
            mesh = ax.pcolormesh(
                np.arange(len(labels) + 1), [r, r + 1], scaled[np.newaxis, :],
                cmap="YlOrRd", vmin=0, vmax=1, edgecolors="none",
            )  # fmt: skip
            mesh.set_gid(f"heat-{r}")
            if len(labels) <= 16:
                for c, v in enumerate(values):
                    if v is not None:
                        text = f"{v:.0%}" if name.startswith("error") else format_ms(v)
                        ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=7,
                                color="#000000")  # fmt: skip
        ax.set_ylim(len(rows), 0)
        ax.set_yticks([r + 0.5 for r in range(len(rows))], [name for name, _ in rows])
        step = max(1, math.ceil(len(labels) / 12))
        ax.set_xticks(
            [c + 0.5 for c in range(0, len(labels), step)], list(labels)[::step], fontsize=8
        )
        ax.tick_params(length=0)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        return _svg(figure, "Latency by time bucket", "heatmap")
