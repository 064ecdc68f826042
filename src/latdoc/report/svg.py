"""Hand-written SVG primitives for the HTML report: scales, nice ticks, axes, shapes.

Every function is pure and returns a string (or numbers). Colours are not set
here: elements carry CSS classes (``axis``, ``grid``, ``tick``, ``ph-dns`` ...)
that the page's stylesheet colours for light and dark themes. The ``<svg>``
element is scaled by its ``viewBox``, so one drawing fits a wide screen and a
phone alike.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from latdoc.report.probe_text import format_ms, pick_unit


def esc(text: object) -> str:
    """Text from the data, safe inside an HTML or SVG element or a quoted attribute."""
    return html.escape(str(text), quote=True)


def num(value: float) -> str:
    """A coordinate with at most three decimals and no trailing zeros."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


@dataclass(frozen=True, slots=True)
class Scale:
    """A linear map from a data interval onto a pixel interval."""

    lo: float
    hi: float
    px_lo: float
    px_hi: float

    def __call__(self, value: float) -> float:
        span = self.hi - self.lo
        if span == 0:
            return self.px_lo
        return self.px_lo + (value - self.lo) / span * (self.px_hi - self.px_lo)

    def length(self, delta: float) -> float:
        """Pixels covered by a data-space distance (always from the same scale factor)."""
        span = self.hi - self.lo
        if span == 0:
            return 0.0
        return delta / span * abs(self.px_hi - self.px_lo)


@dataclass(frozen=True, slots=True)
class Frame:
    """The drawing area of a plot: the whole viewBox minus the margins for axes."""

    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float

    @property
    def x0(self) -> float:
        return self.left

    @property
    def x1(self) -> float:
        return self.width - self.right

    @property
    def y0(self) -> float:
        """The bottom of the plot area (SVG y grows downwards)."""
        return self.height - self.bottom

    @property
    def y1(self) -> float:
        return self.top


def nice_step(span: float, target: int = 5) -> float:
    """A step of 1, 2, 2.5 or 5 × 10^k that cuts ``span`` into about ``target`` pieces."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(target, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * magnitude * 1.0000001:
            return factor * magnitude
    return 10.0 * magnitude


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round tick values that cover ``[lo, hi]``: the first ≤ lo, the last ≥ hi."""
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        hi = lo + (abs(lo) if lo else 1.0)
    step = nice_step(hi - lo, target)
    start = math.floor(lo / step + 1e-9) * step
    count = math.ceil((hi - start) / step - 1e-9)
    return [_clean(start + i * step) for i in range(count + 1)]


def _clean(value: float) -> float:
    rounded = round(value, 9)
    return 0.0 if rounded == 0 else rounded


def ms_tick_labels(ticks: Sequence[float]) -> list[str]:
    """Tick labels for durations in ms, in one unit chosen from the largest tick."""
    largest = max((abs(t) for t in ticks), default=0.0)
    unit = pick_unit(largest) if largest else "ms"
    return [_trim(format_ms(t, unit)) for t in ticks]


def _trim(label: str) -> str:
    number, _, unit = label.partition(" ")
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return f"{number} {unit}"


def token_tick_label(value: float) -> str:
    """``512``, ``2K``, ``2.5K``, ``32K``: prompt lengths as people say them."""
    if abs(value) >= 1000:
        return f"{value / 1000:g}K"
    return f"{value:g}"


def svg_doc(frame: Frame, body: Iterable[str], *, label: str, css_class: str = "plot") -> str:
    """The ``<svg>`` element: scaled by its viewBox, titled for screen readers."""
    return (
        f'<svg class="{esc(css_class)}" viewBox="0 0 {num(frame.width)} {num(frame.height)}" '
        f'role="img" aria-label="{esc(label)}" preserveAspectRatio="xMidYMid meet">'
        f"<title>{esc(label)}</title>" + "".join(body) + "</svg>"
    )


def rect(
    x: float,
    y: float,
    width: float,
    height: float,
    *,
    css_class: str,
    title: str | None = None,
    data: dict[str, str] | None = None,
) -> str:
    attrs = "".join(f' data-{k}="{esc(v)}"' for k, v in (data or {}).items())
    head = (
        f'<rect class="{esc(css_class)}" x="{num(x)}" y="{num(y)}" '
        f'width="{num(max(width, 0.0))}" height="{num(height)}"{attrs}'
    )
    if title is None:
        return head + "/>"
    return head + f"><title>{esc(title)}</title></rect>"


def line(x1: float, y1: float, x2: float, y2: float, *, css_class: str) -> str:
    return (
        f'<line class="{esc(css_class)}" x1="{num(x1)}" y1="{num(y1)}" '
        f'x2="{num(x2)}" y2="{num(y2)}"/>'
    )


def text(
    x: float, y: float, content: str, *, css_class: str = "tick", anchor: str = "start"
) -> str:
    return (
        f'<text class="{esc(css_class)}" x="{num(x)}" y="{num(y)}" '
        f'text-anchor="{anchor}">{esc(content)}</text>'
    )


def circle(x: float, y: float, r: float, *, css_class: str, title: str | None = None) -> str:
    head = f'<circle class="{esc(css_class)}" cx="{num(x)}" cy="{num(y)}" r="{num(r)}"'
    if title is None:
        return head + "/>"
    return head + f"><title>{esc(title)}</title></circle>"


def polyline(points: Iterable[tuple[float, float]], *, css_class: str) -> str:
    coords = " ".join(f"{num(x)},{num(y)}" for x, y in points)
    return f'<polyline class="{esc(css_class)}" points="{coords}"/>'


def x_axis(
    frame: Frame,
    scale: Scale,
    ticks: Sequence[float],
    labels: Sequence[str],
    *,
    title: str,
    grid: bool = True,
) -> list[str]:
    """The bottom axis: a baseline, ticks with labels, optional vertical grid lines, a title."""
    parts = [line(frame.x0, frame.y0, frame.x1, frame.y0, css_class="axis")]
    for value, label in zip(ticks, labels, strict=True):
        x = scale(value)
        if grid:
            parts.append(line(x, frame.y1, x, frame.y0, css_class="grid"))
        parts.append(line(x, frame.y0, x, frame.y0 + 5, css_class="axis"))
        parts.append(text(x, frame.y0 + 18, label, anchor="middle"))
    middle = (frame.x0 + frame.x1) / 2
    parts.append(text(middle, frame.height - 6, title, css_class="axis-title", anchor="middle"))
    return parts


def y_axis(
    frame: Frame,
    scale: Scale,
    ticks: Sequence[float],
    labels: Sequence[str],
    *,
    title: str,
) -> list[str]:
    """The left axis: a baseline, ticks with labels, horizontal grid lines, a rotated title."""
    parts = [line(frame.x0, frame.y1, frame.x0, frame.y0, css_class="axis")]
    for value, label in zip(ticks, labels, strict=True):
        y = scale(value)
        parts.append(line(frame.x0, y, frame.x1, y, css_class="grid"))
        parts.append(line(frame.x0 - 5, y, frame.x0, y, css_class="axis"))
        parts.append(text(frame.x0 - 8, y + 4, label, anchor="end"))
    middle = (frame.y0 + frame.y1) / 2
    parts.append(
        f'<text class="axis-title" x="14" y="{num(middle)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {num(middle)})">{esc(title)}</text>'
    )
    return parts


def legend(
    x: float, y: float, entries: Sequence[tuple[str, str]], *, width: float
) -> tuple[list[str], float]:
    """Swatches with labels laid out in rows from (x, y); returns the parts and the height used."""
    parts: list[str] = []
    cursor_x, cursor_y = x, y
    for css_class, label in entries:
        item_width = 32 + 6.6 * len(label)
        if cursor_x > x and cursor_x + item_width > x + width:
            cursor_x, cursor_y = x, cursor_y + 18
        parts.append(rect(cursor_x, cursor_y - 10, 12, 12, css_class=css_class))
        parts.append(text(cursor_x + 17, cursor_y, label, css_class="legend"))
        cursor_x += item_width
    return parts, cursor_y - y + 18


def ms_scale_ticks(max_ms: float, target: int = 6) -> tuple[list[float], list[str]]:
    """Ticks from 0 to at least ``max_ms`` and their labels, in one unit."""
    ticks = nice_ticks(0.0, max(max_ms, 1e-3), target)
    return ticks, ms_tick_labels(ticks)
