"""A regression gate's verdict: the rows of every ``--fail-if`` gate, as a terminal table
and as the ``gates`` object of a JSON document."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from latdoc.analysis.gates import GateReport
from latdoc.analysis.policy import ALPHA, MIN_N
from latdoc.report._compare import format_p
from latdoc.report.names import format_ms


def gates_to_dict(report: GateReport) -> dict[str, Any]:
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
    a, b = names
    table = Table(box=box.SIMPLE, title="Gates", title_justify="left", pad_edge=False)
    for heading in ("gate", "requests", a, b, f"{b} − {a}", "allowed", "p (Holm)", ""):
        table.add_column(heading, justify="left" if heading in ("gate", "requests") else "right")
    for r in report.rows:
        verdict = Text("FAILED", style="bold red") if r.failed else Text("passed", style="green")
        table.add_row(
            f"{r.gate}\n[dim]{r.group}[/dim]",
            f"{r.n_a}/{r.n_b}",
            format_ms(r.a_ms),
            format_ms(r.b_ms),
            f"{r.b_ms - r.a_ms:+.1f} ms",
            f"+{r.allowed_ms:.1f} ms",
            format_p(r.p_adjusted),
            verdict,
        )
    parts: list[RenderableType] = [table]
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
