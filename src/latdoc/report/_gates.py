"""A regression gate's verdict: the rows of every ``--fail-if`` gate, as a terminal table
and as the ``gates`` object of a JSON document."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from latdoc.analysis.gates import GateReport, GateRow
from latdoc.analysis.policy import ALPHA, MIN_N
from latdoc.report._compare import format_p


def gates_to_dict(report: GateReport) -> dict[str, Any]:
    """The ``gates`` object of a JSON document: α, whether any row failed, every row."""
    return {
        "alpha": ALPHA,
        "failed": bool(report.failed),
        "rows": [
            {
                "gate": r.gate,
                "group": r.group,
                "n_a": r.n_a,
                "n_b": r.n_b,
                "a_ms": r.a_ms,
                "b_ms": r.b_ms,
                "allowed_ms": r.allowed_ms,
                "crossed": r.crossed,
                "p_value": r.p_value,
                "p_adjusted": r.p_adjusted,
                "failed": r.failed,
            }
            for r in report.rows
        ],
        "unchecked": list(report.unchecked),
    }


def render_gates(report: GateReport, names: tuple[str, str] = ("A", "B")) -> RenderableType:
    """The gates as terminal tables, a table per group of like requests, and the verdict."""
    a, b = names
    parts: list[RenderableType] = [Text("Gates", style="bold")]
    groups: dict[str, list[GateRow]] = {}
    for row in report.rows:
        groups.setdefault(row.group, []).append(row)
    for group, rows in groups.items():
        counts = f"{rows[0].n_a} and {rows[0].n_b} requests, in ms"
        table = Table(box=box.SIMPLE, title=f"{group}: {counts}", title_justify="left",
                      title_style="", pad_edge=False)  # fmt: skip
        table.add_column("gate", no_wrap=True)
        for heading in (a, b, "change", "allowed", "p (Holm)", ""):
            table.add_column(heading, justify="right", no_wrap=True)
        for r in rows:
            table.add_row(
                r.gate,
                f"{r.a_ms:.1f}",
                f"{r.b_ms:.1f}",
                f"{r.b_ms - r.a_ms:+.1f}",
                f"+{r.allowed_ms:.1f}",
                format_p(r.p_adjusted).removeprefix("p = ").removeprefix("p "),
                Text("FAILED", style="bold red") if r.failed else Text("passed", style="green"),
            )
        parts.append(table)
    for gate in report.unchecked:
        parts.append(
            Text(f"{gate}: not checked, no group had {MIN_N} requests a side measuring it")
        )
    failed = report.failed
    if failed:
        parts.append(
            Text(
                f"{len(failed)} gate row{'' if len(failed) == 1 else 's'} failed: {b} is worse "
                f"than {a} by more than allowed, and significantly (α = {ALPHA}, Holm).",
                style="bold red",
            )
        )
    else:
        parts.append(Text(f"Every gate passed: {b} is not significantly worse than allowed."))
    return Group(*parts)
