"""The conversation, load and watch pages' plots as inline SVG: time to first token by
turn, one line per strategy; its p50 and p95 by load level with the knee marked (and an
SLO's limits and the most load that met them, where a search found it), the time per
output token's the same way, and requests per second by level with the plateau and
goodput; and the watch's heat map of
latency by time bucket. Each function returns the ``<svg>`` element as text, or
``None`` when there is nothing to draw. Importing this module loads matplotlib: only
the HTML renderers import it, when they render.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.ticker import MaxNLocator

from latdoc.report._figure import (
    FG,
    MUTED,
    SERIES_COLOURS,
    MsFormatter,
    figure_svg,
    new_figure,
    plot_style,
)
from latdoc.report.names import format_ms


def conversation_svg(series: Sequence[tuple[str, Sequence[float | None]]]) -> str | None:
    """Time to first token by turn, one line per strategy (``keep`` first)."""
    if not any(v is not None for _, values in series for v in values):
        return None
    with plot_style():
        figure = new_figure(3.4)
        ax = figure.add_subplot()
        for k, (name, values) in enumerate(series):
            turns = [t + 1 for t, v in enumerate(values) if v is not None]
            ttft = [v for v in values if v is not None]
            (line,) = ax.plot(
                turns, ttft, marker="o", markersize=3, linewidth=1.6, label=name,
                color=SERIES_COLOURS[k % len(SERIES_COLOURS)],
            )  # fmt: skip
            line.set_gid(f"conversation-{k}")
        ax.set_xlabel("turn")
        ax.set_ylabel("time to first token")
        ax.yaxis.set_major_formatter(MsFormatter())
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", frameon=False)
        return figure_svg(figure, "Time to first token by turn, per strategy", "conversation")


def load_ttft_svg(
    levels: Sequence[str],
    ttft_ms: Sequence[tuple[float, float] | None],
    knee: int | None,
    axis: str = "load level",
    *,
    limits: Sequence[tuple[str, float]] = (),
    best: int | None = None,
    due_ms: Sequence[tuple[float, float] | None] = (),
) -> str | None:
    """TTFT p50 and p95 by load level, the knee marked; each of ``limits`` (an SLO's
    objective, named, and its limit in ms) a horizontal line, and ``best`` (the most load
    that met them) marked; ``due_ms``, the p50 and p95 from when each request was due,
    drawn beside the p95 with the gap between them shaded: the generator's own queue
    (client saturation) stands apart from the server's (both lines rise together)."""
    return _by_level(
        levels, ttft_ms, knee, axis, limits=limits, best=best,
        gid="load-ttft", quantity="time to first token", due_ms=due_ms,
    )  # fmt: skip


def load_tpot_svg(
    levels: Sequence[str],
    tpot_ms: Sequence[tuple[float, float] | None],
    axis: str = "load level",
    *,
    limits: Sequence[tuple[str, float]] = (),
) -> str | None:
    """The time per output token after the first (the inter-token latency) p50 and p95
    by load level; each of ``limits`` (a TPOT objective) a horizontal line."""
    return _by_level(
        levels, tpot_ms, None, axis, limits=limits, best=None,
        gid="load-tpot", quantity="time per output token",
    )  # fmt: skip


def _by_level(
    levels: Sequence[str],
    values_ms: Sequence[tuple[float, float] | None],
    knee: int | None,
    axis: str,
    *,
    limits: Sequence[tuple[str, float]],
    best: int | None,
    gid: str,
    quantity: str,
    due_ms: Sequence[tuple[float, float] | None] = (),
) -> str | None:
    """A latency's p50 and p95 by load level, with the marks :func:`load_ttft_svg` says."""
    points = [(k, v) for k, v in enumerate(values_ms) if v is not None]
    if not points:
        return None
    with plot_style():
        figure = new_figure(3.2)
        ax = figure.add_subplot()
        xs = [k for k, _ in points]
        (p50,) = ax.plot(
            xs, [v[0] for _, v in points], marker="o", markersize=3, linewidth=1.6,
            label="p50", color=SERIES_COLOURS[1],
        )  # fmt: skip
        p50.set_gid(f"{gid}-p50")
        (p95,) = ax.plot(
            xs, [v[1] for _, v in points], marker="o", markersize=3, linewidth=1.2,
            linestyle="--", label="p95", color=SERIES_COLOURS[0],
        )  # fmt: skip
        p95.set_gid(f"{gid}-p95")
        due = [(k, v[1], d[1]) for k, v in points if k < len(due_ms) and (d := due_ms[k])]
        if due:
            (from_due,) = ax.plot(
                [k for k, _, _ in due], [d for _, _, d in due], marker="^", markersize=3,
                linewidth=1.2, linestyle=":", label="p95 from the due time",
                color=SERIES_COLOURS[4],
            )  # fmt: skip
            from_due.set_gid(f"{gid}-due-p95")
            gap = ax.fill_between(
                [k for k, _, _ in due], [v for _, v, _ in due], [d for _, _, d in due],
                color=SERIES_COLOURS[4], alpha=0.15, linewidth=0,
            )  # fmt: skip
            gap.set_gid(f"{gid}-due-gap")
        if knee is not None:
            mark = ax.axvline(knee, color=MUTED, linestyle=":", linewidth=1.2)
            mark.set_gid("load-knee")
            ax.annotate(
                f"knee at {levels[knee]}", (knee, 1.0), xycoords=("data", "axes fraction"),
                xytext=(4, -12), textcoords="offset points", color=FG,
            )  # fmt: skip
        for k, (name, limit_ms) in enumerate(limits):
            line = ax.axhline(limit_ms, color=SERIES_COLOURS[3], linestyle="-.", linewidth=1.2)
            line.set_gid(f"load-slo-{k}" if gid == "load-ttft" else f"{gid}-slo-{k}")
            ax.annotate(
                f"SLO: {name}", (1.0, limit_ms), xycoords=("axes fraction", "data"),
                xytext=(-4, 3), textcoords="offset points", ha="right", color=FG,
            )  # fmt: skip
        if best is not None:
            mark = ax.axvline(best, color=SERIES_COLOURS[3], linestyle=":", linewidth=1.4)
            mark.set_gid("load-slo-best")
            ax.annotate(
                f"SLO met up to {levels[best]}", (best, 1.0), xycoords=("data", "axes fraction"),
                xytext=(4, -26), textcoords="offset points", color=FG,
            )  # fmt: skip
        ax.set_xticks(range(len(levels)), list(levels))
        ax.set_xlabel(axis)
        ax.set_ylabel(quantity)
        ax.yaxis.set_major_formatter(MsFormatter())
        ax.set_ylim(bottom=0)
        ax.grid(axis="y")
        ax.legend(loc="upper left", frameon=False)
        label = f"{quantity[0].upper()}{quantity[1:]} p50 and p95 by load level"
        if due:
            label += ", and the p95 from when each request was due"
        if limits:
            label += ", against the SLO " + ", ".join(name for name, _ in limits)
        if best is not None:
            label += f", met up to {levels[best]}"
        return figure_svg(figure, label, gid)


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
    with plot_style():
        figure = new_figure(3.2)
        ax = figure.add_subplot()
        xs = list(range(len(levels)))
        (line,) = ax.plot(
            xs, list(requests_per_s), marker="o", markersize=3, linewidth=1.6,
            label="requests/s", color=SERIES_COLOURS[2],
        )  # fmt: skip
        line.set_gid("load-throughput")
        good = [(k, v) for k, v in enumerate(goodput_per_s) if v is not None]
        if good:
            (g,) = ax.plot(
                [k for k, _ in good], [v for _, v in good], marker="o", markersize=3,
                linewidth=1.2, linestyle="--", label="goodput/s", color=SERIES_COLOURS[3],
            )  # fmt: skip
            g.set_gid("load-goodput")
        if plateau is not None:
            mark = ax.axvline(plateau, color=MUTED, linestyle=":", linewidth=1.2)
            mark.set_gid("load-plateau")
            ax.annotate(
                f"plateau at {levels[plateau]}", (plateau, 1.0),
                xycoords=("data", "axes fraction"), xytext=(4, -12),
                textcoords="offset points", color=FG,
            )  # fmt: skip
        ax.set_xticks(xs, list(levels))
        ax.set_xlabel(axis)
        ax.set_ylabel("requests per second")
        ax.set_ylim(bottom=0)
        ax.grid(axis="y")
        ax.legend(loc="upper left", frameon=False)
        return figure_svg(figure, "Requests per second by load level", "load-throughput")


def clock_heatmap_svg(
    labels: Sequence[str], rows: Sequence[tuple[str, Sequence[float | None]]]
) -> str | None:
    """A heat map: one column per bucket, one row per metric, each row coloured on its own
    scale (cells labelled with their value when they are few enough to read); empty
    buckets are left blank, a row with one value throughout stays pale."""
    if not labels or not any(v is not None for _, values in rows for v in values):
        return None
    import numpy as np

    with plot_style():
        figure = new_figure(0.6 + 0.55 * len(rows))
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
        return figure_svg(figure, "Latency by time bucket", "heatmap")
