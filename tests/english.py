"""English left in a page or a report rendered in another language: what the Chinese
report tests scan for.

A sentence left untranslated shows as a run of English words. Names, units, commands,
flags, URLs and code are allowed: they are not words here (a token with a dot, a digit,
an underscore, a slash, ``=`` or ``-`` in it, an acronym, a CamelCase name), or they are
on :data:`NAMES` or :data:`ALLOWED`.
"""

from __future__ import annotations

import re

RUN = 3
"""Three English words in a row make a sentence left in English."""
NAMES = frozenset({"latdoc", "httpx", "openai", "nginx", "curl", "mtr", "sysctl"})
"""Words that are names of programs, not English: ``latdoc verify`` is a command."""
ALLOWED: frozenset[str] = frozenset()
"""Runs of English words that are names, not sentences, wherever they stand."""

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
