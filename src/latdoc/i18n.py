"""The language latdoc speaks: English, the words of its source and the library's
default, or Chinese, the language of the method's own article, from a gettext catalogue
(``locale/zh/LC_MESSAGES/latdoc.po``, compiled beside it to ``latdoc.mo``).

Words are written in English where they are made, and translated only where they are
shown: a renderer, or the command line's ``Error:`` line, passes each through
:func:`translate`. A sentence without numbers is a plain ``str``, found in the catalogue
by its English text. A sentence with numbers or names in it is a :class:`Message`: a
``str`` whose value is the English sentence (so the JSON documents, the store and every
caller that compares or concatenates text see what they always did), which also keeps
its template and values, so :func:`translate` fills the template's translation with the
same values. A value that is itself a :class:`Message` is translated too; any other
string among the values is a name (a URL, a model, a command) and is shown as it is.

A template is marked where it is written: ``Message("…")`` or, for a constant
translated later, ``N_("…")``; Babel's extractor (``make catalogue``) finds both by
those names, with what the renderers say at once (``_("…")``, :func:`say`) and the HTML
templates' ``{% trans %}``.

One language is active at a time for the process, English until :func:`use_language`
says otherwise: the command line chooses it once, from ``--lang``, ``LATDOC_LANG`` or
the locale (:func:`language_from`). Nothing of this module touches the process's own
locale.
"""

from __future__ import annotations

import contextlib
import functools
import gettext as _gettext
import string
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

__all__ = [
    "DOMAIN",
    "LANGUAGES",
    "LOCALE_DIR",
    "N_",
    "SEPARATORS",
    "Message",
    "fields",
    "gettext",
    "language",
    "language_from",
    "say",
    "speaking",
    "translate",
    "use_language",
]

DOMAIN = "latdoc"
LOCALE_DIR = Path(__file__).with_name("locale")
LANGUAGES = ("en", "zh")
"""What ``--lang`` and ``LATDOC_LANG`` accept: English, and Chinese (``zh_CN`` and every
other ``zh_*`` locale read as ``zh``)."""

_active = "en"


class _Formatter(string.Formatter):
    """:meth:`str.format`, and ``!l``: the value with its first letter lower-cased (an
    English sentence joined after another; a translation may leave it out)."""

    def convert_field(self, value: object, conversion: str | None) -> object:
        if conversion == "l":
            text = str(value)
            return text[:1].lower() + text[1:]
        return super().convert_field(value, conversion)


_FORMAT = _Formatter()


class Message(str):
    """A sentence with values in it: its English text, and what to translate it from.

    ``Message("{n} of {total} requests failed", n=3, total=40)`` is the ``str``
    ``"3 of 40 requests failed"``; :func:`translate` looks its template up in the
    catalogue and formats the translation with the same values (each a format field,
    with its format spec, as :meth:`str.format` reads them, or ``!l``, the value's first
    letter lower-cased). A template the catalogue does not have is used as it is: one
    that only joins other messages (``"{a}; {b!l}"``) need not be in it.
    """

    template: str
    values: Mapping[str, object]

    def __new__(cls, template: str, /, **values: object) -> Message:
        self = super().__new__(cls, _FORMAT.vformat(template, (), values))
        self.template = template
        self.values = values
        return self

    @classmethod
    def of(cls, text: str) -> Message:
        """``text`` as a message: itself where it is one, else a constant, translated by
        its text (a constant marked ``N_`` where it is written)."""
        if isinstance(text, Message):
            return text
        return cls(text.replace("{", "{{").replace("}", "}}"))

    @classmethod
    def joined(
        cls, separator: str, parts: Sequence[str], *, lower: bool = False, names: bool = False
    ) -> Message:
        """``parts`` joined by ``separator``, each (and the separator: :data:`SEPARATORS`)
        translated where shown; with ``lower``, every part after the first starts
        lower-case in English; with ``names``, the parts are names (a flag's values, what
        the user types) shown as they are, and only the separator is translated."""
        keys = [f"p{i}" for i in range(len(parts))]
        fields = [f"{{{key}{'!l' if lower and i else ''}}}" for i, key in enumerate(keys)]
        values = {
            key: part if names else cls.of(part) for key, part in zip(keys, parts, strict=True)
        }
        return cls("{sep}".join(fields), sep=cls.of(separator), **values)

    def __reduce__(self) -> tuple[object, ...]:
        return (_message, (self.template, dict(self.values)))


def _message(template: str, values: dict[str, object]) -> Message:
    return Message(template, **values)


def N_(template: str) -> str:
    """``template`` itself: marks a constant for the catalogue, translated where shown."""
    return template


SEPARATORS = (
    # TRANSLATORS: between the clauses of one sentence, each said on its own.
    N_("; "),
    # TRANSLATORS: between the items of a list (kinds, steps, sizes).
    N_(", "),
)
"""What :meth:`Message.joined` joins with, translated too (``；`` and ``、`` in Chinese)."""


def fields(template: str) -> frozenset[str]:
    """The names of the format fields in ``template``: what its translation must keep."""
    return frozenset(
        name.split(".")[0].split("[")[0]
        for _, name, _, _ in string.Formatter().parse(template)
        if name
    )


@functools.cache
def _catalogue(lang: str) -> _gettext.NullTranslations:
    if lang == "en":
        return _gettext.NullTranslations()
    return _gettext.translation(DOMAIN, LOCALE_DIR, languages=[lang])


def language() -> str:
    """The active language: one of :data:`LANGUAGES`."""
    return _active


def use_language(lang: str) -> None:
    """Speak ``lang`` from now on, in this process; :class:`ValueError` for a language
    latdoc has no catalogue of."""
    global _active
    if lang not in LANGUAGES:
        raise ValueError(f"latdoc speaks {' and '.join(LANGUAGES)}, not {lang!r}")
    _catalogue(lang)
    _active = lang


@contextlib.contextmanager
def speaking(lang: str) -> Iterator[None]:
    """Speak ``lang`` for the length of a block, then the language before it."""
    before = _active
    use_language(lang)
    try:
        yield
    finally:
        use_language(before)


def gettext(msgid: str) -> str:
    """``msgid`` in the active language; itself where the catalogue has no translation."""
    if not msgid:
        return msgid
    return _catalogue(_active).gettext(msgid)


def translate(text: str) -> str:
    """``text`` in the active language: a :class:`Message` from its template, with its
    values (each :class:`Message` among them translated too); a plain ``str`` by its
    text. English is returned as it is."""
    if _active == "en":
        return text
    if not isinstance(text, Message):
        return gettext(text)
    values = {
        key: translate(value) if isinstance(value, Message) else value
        for key, value in text.values.items()
    }
    return _FORMAT.vformat(gettext(text.template), (), values)


def say(template: str, /, **values: object) -> str:
    """``template`` with ``values``, in the active language: what a renderer prints of a
    sentence it makes itself (``translate(Message(template, **values))``)."""
    return translate(Message(template, **values))


def language_from(environ: Mapping[str, str]) -> str | None:
    """The language ``environ`` asks for: ``LATDOC_LANG`` as it is (checked by
    :func:`use_language`), else ``zh`` where the locale's messages are Chinese (the first
    set of ``LC_ALL``, ``LC_MESSAGES`` and ``LANG``, as POSIX reads them, is ``zh`` or
    ``zh_*``); None for English or no locale."""
    asked = environ.get("LATDOC_LANG")
    if asked:
        return asked
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        locale = environ.get(name)
        if locale:
            return "zh" if locale.split(".")[0].split("_")[0] == "zh" else None
    return None
