"""An endpoint seen from several vantage points: one table, the nearest named, a JSON document."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.features.vantage.analysis import VantageComparison
from latdoc.report.names import format_ms

VANTAGE_SCHEMA = "latdoc.vantages/1"
_COLUMNS = (
    ("DNS", "dns_ms"),
    ("connect", "connect_ms"),
    ("TLS", "tls_ms"),
    ("RTT", "rtt_ms"),
    ("TTFT", "ttft_ms"),
)


def render_vantages(comparison: VantageComparison, *, title: str = "") -> RenderableType:
    """Medians per vantage, side by side, then which vantage is nearest and by what."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("vantage", no_wrap=True)
    for header, _ in _COLUMNS:
        table.add_column(f"{header} p50", justify="right", no_wrap=True)
    table.add_column("ok", justify="right", no_wrap=True)
    for row in comparison.rows:
        name = f"{row.name} (nearest)" if row.name == comparison.nearest else row.name
        table.add_row(
            name,
            *(format_ms(getattr(row, key)) for _, key in _COLUMNS),
            f"{row.requests - row.failed}/{row.requests}",
        )
    parts: list[RenderableType] = []
    if title:
        parts.append(Text(f"  {title}", style="bold"))
    parts.append(Padding(table, (0, 0, 0, 2)))
    parts.append(Padding(Text(_verdict(comparison)), (0, 0, 0, 2)))
    return Group(*parts)


def _verdict(comparison: VantageComparison) -> str:
    nearest = next((r for r in comparison.rows if r.name == comparison.nearest), None)
    if nearest is None:
        return "No nearest vantage: fewer than two vantages measured a round trip or a TTFT."
    what = "round trip" if comparison.nearest_by == "rtt" else "TTFT"
    value = nearest.rtt_ms if comparison.nearest_by == "rtt" else nearest.ttft_ms
    line = f"Nearest: {nearest.name}, with the lowest median {what} ({format_ms(value)})"
    margin, p = comparison.margin_ms, comparison.p_value
    if margin is not None and p is not None:
        by = f"{format_ms(margin[0])} … {format_ms(margin[1])}"
        if comparison.significant:
            line += f", nearer than {comparison.runner_up} by {by} (95% CI, p = {p:.2g})"
        else:
            line += (
                f"; not significantly nearer than {comparison.runner_up} (difference "
                f"{by}, p = {p:.2g}): measure more requests (--repeat) to tell them apart"
            )
    else:
        line += f"; too few requests to tell it from {comparison.runner_up} by more than noise"
    return line + ". DNS, connect and TLS are medians over new connections only."


def vantages_to_dict(comparison: VantageComparison) -> dict[str, Any]:
    """The comparison of vantages as the ``latdoc.vantages`` JSON document."""
    return {
        "schema": VANTAGE_SCHEMA,
        "nearest": comparison.nearest,
        "nearest_by": comparison.nearest_by,
        "runner_up": comparison.runner_up,
        "margin_ms": None if comparison.margin_ms is None else list(comparison.margin_ms),
        "p_value": comparison.p_value,
        "vantages": [
            {
                "name": r.name,
                "run_id": r.run_id,
                "host": r.host,
                "requests": r.requests,
                "failed": r.failed,
                **{key: getattr(r, key) for _, key in _COLUMNS},
            }
            for r in comparison.rows
        ],
    }


@dataclass(frozen=True)
class ShownVantages:
    """The vantages as ``probe --vantage`` and ``diagnose --vantage`` show them (a
    :class:`latdoc.report.shown.Shown`): one table, or its JSON document, and where the
    run of each vantage is kept."""

    comparison: VantageComparison
    run_ids: Mapping[str, str]
    store_path: str

    @property
    def page_kind(self) -> str:
        return "report"

    def document(self) -> dict[str, Any]:
        return vantages_to_dict(self.comparison)

    def shown(self) -> tuple[RenderableType, ...]:
        return (render_vantages(self.comparison, title="The endpoint by vantage"),)

    def page(self) -> None:
        return None

    def kept(self) -> str:
        kept = ", ".join(f"{name} {run_id}" for name, run_id in self.run_ids.items())
        return f"Runs kept in {self.store_path}, one per vantage: {kept}."
