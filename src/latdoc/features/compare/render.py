"""What ``latdoc compare`` shows: the comparison's document, its terminal blocks (the
table, then the gates) and its page. Nothing here writes: the command prints these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from latdoc.features.compare.analysis import RunComparison
from latdoc.i18n import N_
from latdoc.report import (
    comparison_to_dict,
    gates_to_dict,
    render_comparison,
    render_comparison_html,
    render_gates,
    run_to_dict,
)
from latdoc.report.costs import cost_block, cost_rows_to_dict, cost_sentences
from latdoc.store import RunInfo

if TYPE_CHECKING:
    from rich.console import RenderableType


def describe(info: RunInfo) -> str:
    """One line that says what a run was."""
    what = info.meta.get("arm_label") if isinstance(info.meta, dict) else None
    label = f"{what}; " if what else ""
    return (
        f"{label}{info.kind} run {info.run_id} of {info.model} at {info.endpoint}, "
        f"{info.started_at:%Y-%m-%d %H:%M} UTC, {info.requests} requests"
    )


@dataclass(frozen=True)
class ShownComparison:
    """Two stored runs compared like with like, as ``latdoc compare`` shows them."""

    result: RunComparison
    names: tuple[str, str] = ("A", "B")

    @property
    def page_kind(self) -> str:
        return "comparison"

    def document(self) -> dict[str, Any]:
        result = self.result
        document = comparison_to_dict(
            result.comparison, a=run_to_dict(result.a), b=run_to_dict(result.b), names=self.names
        )
        if result.gates is not None:
            document["gates"] = gates_to_dict(result.gates)
        if result.costs is not None:
            document["costs"] = cost_rows_to_dict(result.costs)
        return document

    def shown(self) -> tuple[RenderableType, ...]:
        result = self.result
        table = render_comparison(
            result.comparison,
            a_label=describe(result.a),
            b_label=describe(result.b),
            names=self.names,
        )
        blocks: list[RenderableType] = [table]
        if result.costs is not None:
            blocks.append(
                cost_block(N_("Cost by run"), result.costs, result.a.model, difference=True)
            )
        if result.gates is not None:
            blocks.append(render_gates(result.gates, self.names))
        return tuple(blocks)

    def page(self) -> str:
        result = self.result
        cost = (
            ()
            if result.costs is None
            else cost_sentences(result.costs, result.a.model, difference=True)
        )
        return render_comparison_html(
            result.comparison, a_label=describe(result.a), b_label=describe(result.b), cost=cost
        )

    def kept(self) -> None:
        return None
