"""A comparison of two runs: the hyperfine-style sentence, the terminal view, the JSON document.

The sentence reads as hyperfine's does: "B: TTFT 1.84 ± 0.06× faster than A
(p < 0.001, n = 24/24)", the ± being half the 95% interval of the ratio, or
"TTFT: no significant difference (p = 0.41, n = 24/24)".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.analysis.compare import TRIAL_MEAN, Comparison, GroupComparison, MetricComparison
from latdoc.analysis.policy import ALPHA, CONFIDENCE, MIN_INTERVAL_N
from latdoc.report.names import format_ms
from latdoc.store import RunInfo

COMPARISON_SCHEMA = "latdoc.comparison/1"


def format_p(p: float | None) -> str:
    """A p-value as printed: ``p < 0.001``, two significant digits below 0.1, else two
    decimals; ``p not computed`` for ``None``."""
    if p is None:
        return "p not computed"
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.2g}" if p < 0.1 else f"p = {p:.2f}"


def speedup(m: MetricComparison) -> tuple[str, float, float | None] | None:
    """(faster side, times faster, ± half the 95% interval) for a significant difference."""
    faster = m.faster
    if faster is None or m.ratio is None or m.ratio <= 0:
        return None
    low_high = m.ratio_ci
    if faster == "B":
        times = m.ratio
        spread = None if low_high is None else (low_high[1] - low_high[0]) / 2
    else:
        times = 1 / m.ratio
        spread = (
            None
            if low_high is None or low_high[0] <= 0
            else (1 / low_high[0] - 1 / low_high[1]) / 2
        )
    return faster, times, spread


def sentence(m: MetricComparison, names: tuple[str, str] = ("A", "B")) -> str:
    """The one-line verdict on one metric."""
    p = format_p(m.p_adjusted)
    n = f"n = {m.n_a}/{m.n_b}"
    fast = speedup(m)
    if fast is None and m.significant:
        more = "more" if m.difference_ms > 0 else "less"
        amount = format_ms(abs(m.difference_ms))
        return f"{names[1]}: {m.label} {amount} {more} than {names[0]} ({p}, {n})"
    if fast is None:
        return f"{m.label}: no significant difference ({p}, {n})"
    side, times, spread = fast
    faster, slower = (names[1], names[0]) if side == "B" else (names[0], names[1])
    pm = f" ± {spread:.2f}" if spread is not None else ""
    return f"{faster}: {m.label} {times:.2f}{pm}× faster than {slower} ({p}, {n})"


def _interval(ci: tuple[float, float] | None, fmt: Any) -> str:
    return "-" if ci is None else f"{fmt(ci[0])} … {fmt(ci[1])}"


def _group_table(group: GroupComparison, names: tuple[str, str]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("median of", no_wrap=True)
    for header in (names[0], names[1], f"{names[1]} − {names[0]}"):
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column(f"{names[0]}÷{names[1]} (95% CI)", justify="right", no_wrap=True)
    table.add_column("p", justify="right", no_wrap=True)
    for m in group.metrics:
        table.add_row(
            _row_label(m),
            format_ms(m.a_ms),
            format_ms(m.b_ms),
            _signed(m.difference_ms),
            "-" if m.ratio is None else f"{m.ratio:.2f} ({_short_interval(m.ratio_ci)})",
            _p_cell(m.p_adjusted),
            style="bold" if m.significant else None,
        )
    return table


def _row_label(m: MetricComparison) -> str:
    """The metric, and for the experiment's headline that it is (and its statistic)."""
    if not m.headline:
        return m.label
    return f"{m.label}, mean of a trial*" if m.statistic == TRIAL_MEAN else f"{m.label}*"


def _short_interval(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"{ci[0]:.2f}–{ci[1]:.2f}"


def _p_cell(p: float | None) -> str:
    return "-" if p is None else format_p(p).removeprefix("p = ").replace("p < ", "< ")


def _signed(ms: float) -> str:
    text = format_ms(abs(ms))
    if text.startswith("0 "):
        return text
    return ("+" if ms > 0 else "−") + text


def render_comparison(
    comparison: Comparison,
    *,
    a_label: str,
    b_label: str,
    names: tuple[str, str] = ("A", "B"),
) -> RenderableType:
    """Each group's table and verdict lines, headed by what A and B are."""
    parts: list[RenderableType] = [
        Text(f"  {names[0]}: {a_label}"),
        Text(f"  {names[1]}: {b_label}"),
        Text(""),
    ]
    for group in comparison.groups:
        n = max((m.n_a + m.n_b for m in group.metrics), default=0)
        parts.append(Text(f"  {group.key.label()} ({n} requests)", style="bold"))
        parts.append(Padding(_group_table(group, names), (0, 0, 0, 2)))
        for m in group.metrics:
            if m.key in ("ttft", "total") or m.significant or m.headline:
                parts.append(Text("    " + sentence(m, names)))
        parts.append(Text(""))
    for side, keys in ((names[0], comparison.only_a), (names[1], comparison.only_b)):
        for key in keys:
            parts.append(Text(f"  Only {side} measured {key.label()}: not compared.", style="dim"))
    failed = [
        f"{count} of {side}'s requests failed"
        for side, count in ((names[0], comparison.failed_a), (names[1], comparison.failed_b))
        if count
    ]
    if failed:
        parts.append(Text("  " + "; ".join(failed) + " (left out of the comparison)."))
    parts.append(Text("  " + method_note(comparison), style="dim"))
    return Group(*parts)


def method_note(comparison: Comparison) -> str:
    """How the p-values and intervals of ``comparison`` were made, in one line."""
    tests = _tests(comparison)
    level = f"{CONFIDENCE:.0%}"
    intervals = f"intervals: {level}, from order statistics (none under {MIN_INTERVAL_N} a side)."
    if comparison.primary is None:
        return (
            f"p: two-sided Mann–Whitney, Holm-adjusted over the {tests} tests of this "
            f"comparison, significant below {ALPHA:g}; {intervals}"
        )
    return (
        "p: two-sided Mann–Whitney; * the experiment's headline, named before it ran and "
        f"tested alone: the verdict; the other {tests} tests Holm-adjusted together and "
        f"read after it (each p at least the headline's); significant below {ALPHA:g}; "
        f"{intervals}"
    )


def _tests(comparison: Comparison) -> int:
    return sum(
        1 for g in comparison.groups for m in g.metrics if m.p_value is not None and not m.headline
    )


def _metric_dict(m: MetricComparison, names: tuple[str, str]) -> dict[str, Any]:
    return {
        "metric": m.key,
        "label": m.label,
        "n_a": m.n_a,
        "n_b": m.n_b,
        "statistic": m.statistic,
        "a_ms": m.a_ms,
        "b_ms": m.b_ms,
        "difference_ms": m.difference_ms,
        "difference_ci_ms": None if m.difference_ci_ms is None else list(m.difference_ci_ms),
        "ratio_a_over_b": m.ratio,
        "ratio_ci": None if m.ratio_ci is None else list(m.ratio_ci),
        "p_value": m.p_value,
        "p_adjusted": m.p_adjusted,
        "significant": m.significant,
        "faster": m.faster,
        "headline": m.headline,
        "summary": sentence(m, names),
    }


def run_to_dict(info: RunInfo) -> dict[str, Any]:
    """A stored run as a comparison's document names it (its ``a`` and ``b``)."""
    return {
        "run_id": info.run_id,
        "kind": info.kind,
        "endpoint": info.endpoint,
        "model": info.model,
        "started_at": info.started_at.isoformat(),
        "requests": info.requests,
        "failed": info.failed,
        "label": info.meta.get("arm_label") if isinstance(info.meta, dict) else None,
    }


def comparison_to_dict(
    comparison: Comparison,
    *,
    a: dict[str, Any],
    b: dict[str, Any],
    names: tuple[str, str] = ("A", "B"),
) -> dict[str, Any]:
    """The comparison as a JSON document: milliseconds, ratios A ÷ B, Holm-adjusted p."""
    return {
        "schema": COMPARISON_SCHEMA,
        "a": a,
        "b": b,
        "alpha": ALPHA,
        "groups": [
            {
                "step": g.key.step,
                "prompt_tokens": g.key.prompt_tokens,
                "concurrency": g.key.concurrency,
                "cold": g.key.cold,
                "label": g.key.label(),
                "metrics": [_metric_dict(m, names) for m in g.metrics],
            }
            for g in comparison.groups
        ],
        "only_a": [k.label() for k in comparison.only_a],
        "only_b": [k.label() for k in comparison.only_b],
        "failed_a": comparison.failed_a,
        "failed_b": comparison.failed_b,
    }


def render_comparison_html(
    comparison: Comparison,
    *,
    a_label: str,
    b_label: str,
    names: tuple[str, str] = ("A", "B"),
    heading: str = "A against B",
    cost: Sequence[str] = (),
) -> str:
    """The comparison as one self-contained HTML page (no script, nothing fetched), with
    what each side cost in ``cost``'s sentences."""
    from latdoc.report._html import environment

    groups = []
    for group in comparison.groups:
        rows = [
            {
                "label": _row_label(m),
                "a": format_ms(m.a_ms),
                "b": format_ms(m.b_ms),
                "difference": f"{_signed(m.difference_ms)} "
                f"({_interval(m.difference_ci_ms, _signed)})",
                "ratio": "-"
                if m.ratio is None
                else f"{m.ratio:.2f}× ({_interval(m.ratio_ci, lambda v: f'{v:.2f}')})",
                "p": format_p(m.p_adjusted),
                "significant": m.significant,
            }
            for m in group.metrics
        ]
        sentences = [
            {"text": sentence(m, names), "significant": m.significant}
            for m in group.metrics
            if m.key in ("ttft", "total") or m.significant or m.headline
        ]
        groups.append({"label": group.key.label(), "rows": rows, "sentences": sentences})
    notes = [f"Only {names[0]} measured {k.label()}: not compared." for k in comparison.only_a]
    notes += [f"Only {names[1]} measured {k.label()}: not compared." for k in comparison.only_b]
    return (
        environment()
        .get_template("compare.html.j2")
        .render(
            title=f"latdoc: {heading}",
            heading=heading,
            names=names,
            a_label=a_label,
            b_label=b_label,
            groups=groups,
            notes=notes,
            alpha=f"{ALPHA:g}",
            method=method_note(comparison).removeprefix("p: "),
            cost=list(cost),
        )
    )
