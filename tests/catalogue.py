"""The message catalogue against the source: what ``make lint`` checks and ``make
catalogue`` updates.

The messages are what Babel extracts from latdoc's source, by the names that mark them
(:data:`KEYWORDS`: ``Message("…")``, ``N_("…")``, ``_("…")``) and from the HTML
templates' ``{% trans %}`` blocks. Each language's ``latdoc.po`` must hold every one of
them translated (not fuzzy, not empty), no message the source no longer has, the same
format fields in each translation as in its English (``{ms}``, ``%(n)s``), and the
``latdoc.mo`` beside it must be that ``.po`` compiled.

``python tests/catalogue.py`` checks, prints each problem and exits 1 on any;
``python tests/catalogue.py --update`` extracts, merges the new messages into each
``.po`` (untranslated, or fuzzy where Babel finds a near one) and drops the gone, and
compiles the ``.mo``: then a translator fills in the ``.po``, and ``--update`` again.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "latdoc"
LOCALE = PACKAGE / "locale"
DOMAIN = "latdoc"
LANGUAGES = ("zh",)

KEYWORDS = {"_": None, "gettext": None, "say": None, "N_": None, "Message": None}
"""The calls whose first argument is a message: what the renderers say (``_``,
``say``), the markers of constants (``N_``) and of sentences with values
(``Message``)."""
MAPPING = [
    ("**/lab/_builtin.py", "ignore"),
    ("**.py", "python"),
    ("**/templates/**.j2", "jinja2"),
]
"""Where the messages are: the lab's too, whose errors ``latdoc lab`` says on its
``Error:`` line, but for the built-in endpoint's, whose ``say`` is the caller's printer
(its words are the command line's to translate)."""
TEMPLATE_OPTIONS = {
    "extensions": "jinja2.ext.i18n",
    "trim_blocks": "true",
    "lstrip_blocks": "true",
    "newstyle_gettext": "true",
}
"""As :func:`latdoc.report._html.environment` reads the templates."""
COMMENT_TAGS = ["TRANSLATORS:"]
"""A comment starting so, on the line before a message, is shown to its translator."""

_F_STRING = re.compile(r"(?<![\w.])(?:Message|N_|_|say)\(\s*(?:[rR]?[fF]|[fF][rR])[\"']")
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)[^{}]*\}|%\(([A-Za-z_][A-Za-z0-9_]*)\)[sdf]")


def extract() -> Catalog:
    """Every message the source marks, with where it is and its translator comments."""
    catalog = Catalog(domain=DOMAIN, project="latdoc", msgid_bugs_address=None)
    options = {"**/templates/**.j2": TEMPLATE_OPTIONS}
    for filename, lineno, message, comments, context in extract_from_dir(
        PACKAGE, MAPPING, options, KEYWORDS, COMMENT_TAGS, strip_comment_tags=True
    ):
        catalog.add(
            message,
            None,
            [(f"src/latdoc/{filename}", lineno)],
            auto_comments=comments,
            context=context,
        )
    return catalog


def po_path(lang: str) -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def compiled(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_mo(out, catalog)
    return out.getvalue()


def _fields(text: str) -> set[str]:
    return {a or b for a, b in _FIELD.findall(text)}


def _translated(message: Message) -> bool:
    strings = message.string if isinstance(message.string, tuple) else (message.string,)
    return all(strings)


def problems(path: Path, source: Catalog) -> Iterator[str]:
    """What is wrong with the ``.po`` at ``path`` (and its ``.mo``) against ``source``,
    one line each."""
    with path.open("rb") as f:
        po = read_po(f)
    for message in source:
        if not message.id:
            continue
        have = po.get(message.id, message.context)
        if have is None:
            yield f"missing: {message.id!r} ({_where(message)})"
        elif not _translated(have):
            yield f"untranslated: {message.id!r} ({_where(message)})"
        elif have.fuzzy:
            yield f"fuzzy (check it, then drop the flag): {message.id!r}"
        elif _fields(str(have.id)) != _fields(str(have.string)):
            yield (
                f"the translation of {message.id!r} has fields "
                f"{sorted(_fields(str(have.string)))}, not {sorted(_fields(str(have.id)))}"
            )
    for message in po:
        if message.id and source.get(message.id, message.context) is None:
            yield f"stale (the source no longer has it): {message.id!r}"
    if po.obsolete:
        yield f"{len(po.obsolete)} obsolete (#~) messages: run --update"
    mo = path.with_suffix(".mo")
    if not mo.exists() or mo.read_bytes() != compiled(po):
        yield f"{mo.name} is not the .po compiled: run --update"


def f_strings() -> Iterator[str]:
    """Marked f-strings: Babel cannot extract them, and their values are lost."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.match("lab/_builtin.py"):
            continue
        text = path.read_text(encoding="utf-8")
        for match in _F_STRING.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            yield f"{path.relative_to(ROOT)}:{line}: a marked f-string: use Message(…, x=…)"


def _where(message: Message) -> str:
    return ", ".join(f"{file}:{line}" for file, line in message.locations[:2])


def update(lang: str, source: Catalog) -> None:
    path = po_path(lang)
    if path.exists():
        with path.open("rb") as f:
            po = read_po(f, locale=lang)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        po = Catalog(locale=lang, domain=DOMAIN, project="latdoc")
    po.update(source, update_header_comment=False, update_creation_date=False)
    po.obsolete.clear()
    with path.open("wb") as f:
        write_po(f, po, width=100, include_previous=True, include_lineno=False)
    with path.open("rb") as f:
        path.with_suffix(".mo").write_bytes(compiled(read_po(f)))


def main(argv: list[str]) -> int:
    source = extract()
    if argv == ["--update"]:
        for lang in LANGUAGES:
            update(lang, source)
        argv = []
    if argv:
        print(f"usage: {sys.argv[0]} [--update]", file=sys.stderr)
        return 2
    found = list(f_strings())
    for lang in LANGUAGES:
        path = po_path(lang)
        found += [f"{path.relative_to(ROOT)}: {line}" for line in problems(path, source)]
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
