"""English left in a page or a report rendered in another language: what the Chinese
report tests scan for.

A sentence left untranslated shows as a run of English words. Names, units, commands,
flags, URLs and code are allowed: they are not words here (a token with a dot, a digit,
an underscore, a slash, ``=`` or ``-`` in it, an acronym, a CamelCase name), or they are
on :data:`NAMES` or :data:`ALLOWED`.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from latdoc.reference import healthy_reference

RUN = 3
"""Three English words in a row make a sentence left in English."""
NAMES = frozenset({"latdoc", "httpx", "openai", "nginx", "curl", "mtr", "sysctl", "pip", "uv"})
"""Words that are names of programs, not English: ``latdoc verify`` is a command."""
ALLOWED = frozenset(
    {"Too many open files"}
    | {source.by for quantity in healthy_reference() for source in quantity.sources}
)
"""Runs of English words that are names, not sentences, wherever they stand: an error
message the system itself prints (EMFILE's), and who the reference profile cites
(``Ookla Speedtest Global Index``)."""

_WORD = re.compile(r"^(?:[Aa]|[A-Za-z][a-z]+(?:'s)?)$")
_EDGES = "`'\"()[]{}<>,.;:!?“”‘’（）：；，。、！？…"


def _word(token: str) -> str | None:
    bare = token.strip(_EDGES)
    return bare if _WORD.match(bare) and bare not in NAMES else None


def english_runs(text: str, run: int = RUN) -> list[str]:
    """Each run of ``run`` or more English words in ``text``, line by line, but the runs
    :data:`ALLOWED` names."""
    found = []
    for line in text.splitlines():
        for name in ALLOWED:
            line = line.replace(name, " | ")
        words: list[str] = []
        for token in [*line.split(), ""]:
            word = _word(token)
            if word is not None:
                words.append(word)
                continue
            if len(words) >= run:
                found.append(" ".join(words))
            words = []
    return found


class _Visible(HTMLParser):
    """A page's text as a reader sees it, a line per block: not its stylesheet, its
    plots (their text is drawn as outlines) or a name in ``<code>`` outside a ``<pre>``."""

    _HIDDEN = frozenset({"style", "svg", "script"})
    _BLOCKS = frozenset({"p", "li", "h1", "h2", "h3", "dt", "dd", "th", "td", "pre", "title"})

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.open.append(tag)
        if tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            del self.open[len(self.open) - 1 - self.open[::-1].index(tag) :]

    def handle_data(self, data: str) -> None:
        hidden = self._HIDDEN.intersection(self.open)
        name = bool(self.open) and self.open[-1] == "code" and "pre" not in self.open
        if not hidden and not name:
            self.parts.append(data)


def visible_text(page: str) -> str:
    """What a reader of ``page`` reads (:class:`_Visible`)."""
    parser = _Visible()
    parser.feed(page)
    return "".join(parser.parts)
