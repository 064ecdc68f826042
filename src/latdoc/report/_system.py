"""The client host's checklist: a table of settings, then why each matters and the command
that changes it; the same as the ``latdoc.system/1`` document. Builds; prints nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.i18n import N_
from latdoc.model import SystemItem
from latdoc.model.document import item_to_dict

SYSTEM_SCHEMA = "latdoc.system/1"

NOT_READABLE = N_("not readable here")


def status_text(item: SystemItem) -> Text:
    """``ok``, ``change`` or, when nothing was judged, ``?`` (not read) or ``info``."""
    if item.ok is True:
        return Text("ok", style="green")
    if item.ok is False:
        return Text("change", style="bold red")
    if item.current is None:
        return Text("?", style="yellow")
    return Text("info", style="dim")


def _current(item: SystemItem) -> Text:
    if item.current is None:
        return Text(NOT_READABLE, style="dim")
    return Text(item.current, style="bold" if item.ok is False else "")


def short_name(item: SystemItem) -> str:
    """The name without the ``net.ipv4.`` every TCP sysctl shares (the details give it whole)."""
    return item.name.removeprefix("net.ipv4.")


def _table(items: Sequence[SystemItem]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, show_edge=False)
    table.add_column("", no_wrap=True)
    table.add_column("setting", no_wrap=True)
    table.add_column("now")
    table.add_column("recommended")
    for item in items:
        table.add_row(status_text(item), short_name(item), _current(item), item.recommended)
    return table


def item_details(item: SystemItem) -> Group:
    """One item's name and status, why, what it allows, and its command (never wrapped
    inside a word, and indented under itself when it wraps)."""
    lines: list[RenderableType] = [
        Text.assemble(status_text(item), " ", (item.name, "bold")),
        Padding(Text(item.why), (0, 0, 0, 4), expand=False),
    ]
    if item.allows is not None:
        lines.append(Padding(Text.assemble(("allows: ", "dim"), item.allows), (0, 0, 0, 4)))
    lines.append(Padding(Text.assemble(("command: ", "dim"), (item.command, "bold")), (0, 0, 0, 4)))
    return Group(*lines)


def render_system(items: Sequence[SystemItem], concurrency: int) -> RenderableType:
    """The checklist for ``concurrency`` streams: the table, then each item in detail."""
    failing = sum(1 for i in items if i.ok is False)
    unread = sum(1 for i in items if i.ok is None and i.current is None)
    summary = f"{failing} of {len(items)} settings to change for {concurrency} concurrent streams"
    if unread:
        summary += f"; {unread} {NOT_READABLE}"
    parts: list[RenderableType] = [
        Padding(Text(f"Client host checklist — {summary}.", style="bold"), (0, 0, 1, 2)),
        Padding(_table(items), (0, 0, 0, 2)),
        Padding(Text("Why, and the command that changes it:", style="bold"), (1, 0, 0, 2)),
    ]
    parts += [Padding(item_details(i), (0, 0, 0, 2)) for i in items]
    return Group(*parts)


def system_to_dict(items: Sequence[SystemItem], concurrency: int) -> dict[str, Any]:
    """The ``latdoc.system/1`` document: every item, ``current`` null where not readable,
    ``ok`` null where nothing was judged."""
    return {
        "schema": SYSTEM_SCHEMA,
        "concurrency": concurrency,
        "failing": [i.key for i in items if i.ok is False],
        "items": [item_to_dict(i) for i in items],
    }


@dataclass(frozen=True)
class ShownSystem:
    """The checklist as ``latdoc system`` shows it (a :class:`~latdoc.report.shown.Shown`):
    its table and details, or its document; no page, no run kept."""

    items: Sequence[SystemItem]
    concurrency: int

    @property
    def page_kind(self) -> str:
        return "report"

    def document(self) -> dict[str, Any]:
        return system_to_dict(self.items, self.concurrency)

    def shown(self) -> tuple[RenderableType, ...]:
        return (render_system(self.items, self.concurrency),)

    def page(self) -> None:
        return None

    def kept(self) -> None:
        return None
