"""What ``latdoc diagnose`` and ``latdoc report`` show of a diagnosis: the plan said
before anything is sent, the JSON document, the terminal blocks and the page.

Nothing here writes: the command prints what these return.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from latdoc.features.diagnose.analysis import DiagnosisRun
from latdoc.model import dollars, planned_cost
from latdoc.workload import (
    LENGTHS,
    DiagnosisPlan,
    planned_requests,
    planned_sends,
    planned_spend,
    planned_tokens,
)

if TYPE_CHECKING:
    from rich.console import RenderableType


def plan_line(plan: DiagnosisPlan) -> str:
    """What the run may spend and what it will do, said before anything is sent."""
    worst = planned_tokens(plan.max_tokens, plan.context_window, plan.concurrency)
    tokens = min(worst, plan.token_budget) if plan.token_budget else worst
    requests = min(planned_requests(plan.concurrency), plan.max_requests)
    money = ""
    if plan.price is not None and (spend := planned_spend(plan)) is not None:
        cap = spend if plan.max_cost is None else min(spend, plan.max_cost)
        money = f", {dollars(cap)} (at the price from {plan.price.source})"
    return (
        f"Plan: at most {requests} requests, {tokens:,} prompt + output tokens{money} and "
        f"{plan.max_seconds:g} s — calibration, network (cold and warm), input length "
        f"({', '.join(str(n) for n in LENGTHS)} tokens, as the time allows), load "
        f"(sequential, then {plan.concurrency} at once); each step stops once its "
        "decision is settled."
    )


def planned_table(plan: DiagnosisPlan) -> RenderableType:
    """What the full plan may send, step by step, each request at the bound it is
    reserved at, and its worst-case cost at the plan's price (``diagnose --dry-run``)."""
    from rich import box
    from rich.padding import Padding
    from rich.table import Table

    price = plan.price
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    heads = ["step", "requests", "prompt tokens", "output tokens"]
    heads += [] if price is None else ["at most"]
    for k, head in enumerate(heads):
        table.add_column(head, justify="left" if k == 0 else "right", no_wrap=True)
    total = 0.0
    for send in planned_sends(plan.max_tokens, plan.context_window, plan.concurrency):
        row = [send.step, str(send.requests), f"{send.prompt_tokens:,}", str(send.output_tokens)]
        if price is not None:
            cost = send.requests * planned_cost(price, send.prompt_tokens, send.output_tokens)
            total += cost
            row.append(dollars(cost))
        table.add_row(*row)
    if price is not None:
        table.add_row("all", "", "", "", dollars(total), style="bold")
    return Padding(table, (0, 0, 0, 2))


def diagnosis_document(run: DiagnosisRun) -> dict[str, Any]:
    """The diagnosis as JSON (:data:`latdoc.report.DIAGNOSIS_SCHEMA`), with what recorded
    the traffic (``traffic_source``) for a diagnosis of recorded traffic."""
    from latdoc.report import diagnosis_to_dict

    document = diagnosis_to_dict(run.diagnosis)
    if run.source is not None:
        document["traffic_source"] = dict(run.source)
    return document


def diagnosis_blocks(run: DiagnosisRun) -> tuple[RenderableType, ...]:
    """The terminal view: what recorded the traffic, if it was recorded, then the
    diagnosis."""
    from rich.text import Text

    from latdoc.report import render_diagnosis

    blocks: list[RenderableType] = []
    if run.source is not None:
        read_from = f", read from {run.source['file']}" if "file" in run.source else ""
        blocks.append(Text(f"  Traffic recorded by {run.source['recorded_by']}{read_from}"))
    blocks.append(render_diagnosis(run.diagnosis))
    return tuple(blocks)


def diagnosis_page(run: DiagnosisRun) -> str:
    """The diagnosis as a self-contained HTML page, with the plots of its samples."""
    from latdoc.report import render_html

    return render_html(run.diagnosis, run.samples)


@dataclass(frozen=True)
class ShownDiagnosis:
    """A diagnosis as the command shows it (a :class:`latdoc.report.shown.Shown`)."""

    run: DiagnosisRun

    @property
    def page_kind(self) -> str:
        return "report"

    def document(self) -> dict[str, Any]:
        return diagnosis_document(self.run)

    def shown(self) -> tuple[RenderableType, ...]:
        return diagnosis_blocks(self.run)

    def page(self) -> str:
        return diagnosis_page(self.run)

    def kept(self) -> None:
        return None
