"""What a command shows of a result, whatever the command: :class:`Shown`.

Each feature's result is shown the same three ways (its JSON document, its blocks on
the terminal, its HTML page if it has one) and says where its runs are kept; the
command line writes them as its options ask, with one rule for every command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = ["Shown"]


class Shown(Protocol):
    """What a command shows of a result: its JSON document, the blocks printed to the
    terminal, an HTML page if it has one, and where its runs are kept."""

    @property
    def page_kind(self) -> str:
        """What its page is, in a word: ``comparison`` or ``report``."""
        ...

    def document(self) -> dict[str, Any]:
        """The result as JSON, naming its schema, notes included."""
        ...

    def shown(self) -> tuple[RenderableType, ...]:
        """What the terminal shows, block by block (each printed on its own)."""
        ...

    def page(self) -> str | None:
        """The result as a self-contained HTML page, if it has one."""
        ...

    def kept(self) -> str | None:
        """Where its runs are kept, in one line, if it kept any."""
        ...
