"""The figure every report plot is drawn on, and how it becomes inline SVG: a
``matplotlib.figure.Figure`` on the SVG canvas (no pyplot, no global figure state),
matplotlib's defaults plus ours whatever the user's matplotlibrc says, text drawn as
paths so a plot looks the same on every machine with no font to fetch, axis and label
colours as the page's CSS variables so plots follow its light or dark scheme, and
duration ticks in one unit per axis. Importing this module loads matplotlib: only the
HTML renderers import it, when they render.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import matplotlib
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.ticker import Formatter
from matplotlib.typing import RcKeyType

from latdoc.report._plot_data import ms_tick_label, ms_unit

__all__ = [
    "FG",
    "MUTED",
    "SERIES_COLOURS",
    "MsFormatter",
    "figure_svg",
    "new_figure",
    "plot_style",
]

# Stand-in colours that no plot uses otherwise; after drawing they become the
# page's CSS variables, so text and axes follow its light or dark scheme.
FG, MUTED, _GRID = "#010203", "#040506", "#070809"
_CSS_COLOURS = {FG: "var(--fg)", MUTED: "var(--muted)", _GRID: "var(--grid)"}

_STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "path",
    "svg.hashsalt": "latdoc",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "text.color": FG,
    "axes.labelcolor": FG,
    "axes.edgecolor": MUTED,
    "axes.facecolor": "none",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.axisbelow": True,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "xtick.labelcolor": FG,
    "ytick.labelcolor": FG,
    "grid.color": _GRID,
    "grid.linewidth": 0.8,
    "figure.facecolor": "none",
    "savefig.facecolor": "none",
    "savefig.edgecolor": "none",
    "legend.frameon": False,
}
_WIDTH_IN = 9.0
SERIES_COLOURS = ("#d64545", "#3b7dd8", "#2e9e5b", "#a05ad0", "#e08a1e", "#4a4f57")


@contextmanager
def plot_style() -> Iterator[None]:
    """matplotlib's defaults plus ours, whatever the user's matplotlibrc says; restored after."""
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(_STYLE)
        yield


def rows_on_a_time_axis(ax: Any, rows: int) -> None:
    """An axes of ``rows`` horizontal bars, the first at the top, on a time axis in ms
    from zero, gridded along it (the waterfalls)."""
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_xlim(left=0)
    ax.xaxis.set_major_formatter(MsFormatter())
    ax.grid(axis="x")
    ax.tick_params(axis="y", length=0)


def new_figure(height_in: float) -> Figure:
    figure = Figure(figsize=(_WIDTH_IN, height_in), layout="constrained")
    FigureCanvasSVG(figure)
    return figure


def figure_svg(figure: Figure, label: str, css_class: str) -> str:
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


class MsFormatter(Formatter):
    """Duration ticks in one unit per axis (``0 s, 0.5 s, 1 s``), chosen from the largest."""

    unit = "ms"

    def set_locs(self, locs: Any) -> None:
        super().set_locs(locs)
        self.unit = ms_unit([float(v) for v in locs])

    def __call__(self, x: float, pos: int | None = None) -> str:
        return ms_tick_label(x, self.unit)
