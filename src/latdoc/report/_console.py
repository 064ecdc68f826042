"""The one sink for terminal renderables: a rich ``Console`` on a stream.

Colour only when the stream is a terminal, none when ``NO_COLOR`` is set (not
even bold: ``NO_COLOR`` users asked for plain text), plain text when piped.
Markup and highlighting are off, so text from the data (an error message with
``[brackets]``, a model name) is printed as it is.
"""

from __future__ import annotations

import io
import os
from typing import TextIO

from rich.columns import Columns
from rich.console import Console, RenderableType
from rich.text import Text


def make_console(file: TextIO, *, width: int | None = None) -> Console:
    """A console on ``file`` that styles only a terminal and honours ``NO_COLOR``."""
    plain = bool(os.environ.get("NO_COLOR"))
    return Console(
        file=file,
        width=width,
        color_system=None if plain else "auto",
        markup=False,
        emoji=False,
        highlight=False,
    )


def render_text(renderable: RenderableType, width: int = 80) -> str:
    """The renderable as plain text at ``width`` columns, as a pipe would receive it."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=False,
        color_system=None,
        markup=False,
        emoji=False,
        highlight=False,
    )
    console.print(renderable)
    return buffer.getvalue()


def side_by_side(items: list[Text]) -> Columns:
    """Short items side by side, wrapped between items and never inside one, so a number
    stays next to its unit and its name at any width."""
    for item in items:
        item.no_wrap = True
    return Columns(items, padding=(0, 3))
