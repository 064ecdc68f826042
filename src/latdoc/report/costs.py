"""What a set of requests cost, side by side: a load's levels, a verify's arms, two runs
compared. One table for every command, with the price it was read at, and the rows'
JSON; where there is no price, one sentence saying so and no figure. Its words are
marked for the catalogue: the table is said in the active language, the sentences are
:class:`~latdoc.i18n.Message` s, translated where a page shows them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.i18n import N_, Message, say, translate
from latdoc.model import CostSummary, Price, cost_text, cost_to_dict, dollars, summarise_costs
from latdoc.records import RequestTrace

__all__ = ["CostRow", "cost_block", "cost_rows_to_dict", "cost_sentences"]


@dataclass(frozen=True, slots=True)
class CostRow:
    """One set of requests: what it is, what it cost, and how many of them succeeded."""

    label: str
    cost: CostSummary | None
    succeeded: int

    @classmethod
    def of(cls, label: str, traces: Sequence[RequestTrace], price: Price | None) -> CostRow:
        """``traces`` at ``price`` (none: their cost is unknown)."""
        cost = None if price is None else summarise_costs(traces, price)
        return cls(label, cost, sum(1 for t in traces if t.ok))

    @property
    def per_success(self) -> float | None:
        """Dollars a successful request cost, the failed ones' cost included; ``None``
        where some request reported no usage, or none succeeded."""
        c = self.cost
        if c is None or c.total is None or c.without_usage or not self.succeeded:
            return None
        return c.total / self.succeeded


_HEADERS = ("", N_("requests"), N_("cost"), N_("per 1,000"), N_("per success"))
"""The table's columns: the rows' labels (names, unheaded), then the figures."""


def _money(value: float | None) -> str:
    return "-" if value is None else dollars(value)


def cost_block(
    heading: str, rows: Sequence[CostRow], model: str, *, difference: bool = False
) -> RenderableType:
    """The rows as a table under ``heading`` (a constant marked ``N_`` where it is
    written) with the prices they were read at; with ``difference`` (two rows), a third
    row of the second's cost less the first's. Where no row has a price, the sentence
    that says the cost is unknown. Said in the active language."""
    priced = [r.cost for r in rows if r.cost is not None]
    if not priced:
        return Padding(Text(translate(cost_text(None, model)), style="dim"), (0, 0, 0, 2))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for k, header in enumerate(_HEADERS):
        table.add_column(translate(header), justify="left" if k == 0 else "right", no_wrap=True)
    for r in rows:
        c = r.cost
        table.add_row(
            r.label,
            "-" if c is None else str(c.requests),
            _money(None if c is None else c.total),
            _money(None if c is None else c.per_1000_requests),
            _money(r.per_success),
        )
    if difference and len(rows) == 2:
        table.add_row(*_difference(rows[0], rows[1]), style="bold")
    lines: list[RenderableType] = [
        Text(
            "  "
            + say(
                "{heading}, in US dollars ({prices})",
                heading=Message.of(heading),
                prices=_prices(rows),
            )
        ),
        Padding(table, (0, 0, 0, 2)),
    ]
    missing = sum(c.without_usage for c in priced)
    if missing:
        lines.append(
            Padding(
                Text(
                    translate(
                        Message(
                            N_("{n} request reported no usage: not counted")
                            if missing == 1
                            else N_("{n} requests reported no usage: not counted"),
                            n=missing,
                        )
                    ),
                    style="dim",
                ),
                (0, 0, 0, 2),
            )
        )
    return Group(*lines)


def _price_words(price: Price) -> Message:
    named = Message(" of {model}", model=price.priced_as) if price.priced_as else ""
    return Message("the price{named} from {source}", named=named, source=price.source)


def _prices(rows: Sequence[CostRow]) -> Message:
    """The prices the rows were read at: one, or each row's where they differ."""
    prices = {r.label: r.cost.price for r in rows if r.cost is not None}
    if len(set(prices.values())) == 1:
        return Message("at {price}", price=_price_words(next(iter(prices.values()))))
    return Message.joined(
        "; ",
        [
            Message("{label} at {price}", label=label, price=_price_words(price))
            for label, price in prices.items()
        ],
    )


def _difference(a: CostRow, b: CostRow) -> tuple[str, ...]:
    def less(x: float | None, y: float | None) -> str:
        if x is None or y is None:
            return "-"
        change = y - x
        relative = f" ({change / x:+.0%})" if x else ""
        return f"{'+' if change >= 0 else '-'}{dollars(abs(change))}{relative}"

    ca, cb = a.cost, b.cost
    return (
        f"{b.label} − {a.label}",
        "",
        "",
        less(
            None if ca is None else ca.per_1000_requests,
            None if cb is None else cb.per_1000_requests,
        ),
        less(a.per_success, b.per_success),
    )


def cost_sentences(rows: Sequence[CostRow], model: str, *, difference: bool = False) -> list[str]:
    """The rows in sentences, for a page: each row's cost, per 1,000 and per success, the
    prices read, and B's difference; without a price, the one sentence. Each is a
    :class:`~latdoc.i18n.Message`, translated where the page shows it."""
    priced = [r for r in rows if r.cost is not None]
    if not priced:
        return [cost_text(None, model)]
    lines: list[str] = []
    for r in rows:
        c = r.cost
        if c is None:
            lines.append(Message("{label}: no price", label=r.label))
            continue
        lines.append(
            Message(
                "{label}: {cost} for {n} requests ({per_1000} per 1,000, {per_success} per "
                "success)",
                label=r.label,
                cost=_money(c.total),
                n=c.requests,
                per_1000=_money(c.per_1000_requests),
                per_success=_money(r.per_success),
            )
        )
    if difference and len(rows) == 2:
        label, _, _, per_1000, per_success = _difference(rows[0], rows[1])
        lines.append(
            Message(
                "{label}: {per_1000} per 1,000, {per_success} per success",
                label=label,
                per_1000=per_1000,
                per_success=per_success,
            )
        )
    lines.append(Message("In US dollars, {prices}.", prices=_prices(rows)))
    return lines


def cost_rows_to_dict(rows: Sequence[CostRow]) -> list[dict[str, Any]]:
    """Each row as JSON: its label, its cost (null without a price), its cost a success."""
    return [
        {"label": r.label, "cost": cost_to_dict(r.cost), "per_success": r.per_success} for r in rows
    ]
