"""JSON read as typed values, each failure a :class:`UsageError` naming the file and the place.

``At(document, "spans.json")["resourceSpans"][0]["spans"]`` walks the document;
``.obj()``, ``.list()``, ``.text()`` and ``.integer()`` check what is there, so a
malformed file fails with ``spans.json: resourceSpans[0].spans: expected a list, got
"x"`` rather than deep in whoever used the value.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from typing import Any

from latdoc.errors import UsageError, nesting_checked
from latdoc.i18n import Message

INT64 = (-(2**63), 2**63 - 1)
"""What a protobuf ``int64``/``fixed64`` field (an OTLP time or ``intValue``) can hold."""
_SHOWN = 40
"""How many characters of a wrong value an error quotes."""


def decode(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text (a leading byte-order mark dropped), or an error naming the
    first byte that is not."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(
            Message("{source}: not UTF-8 text (byte {start})", source=source, start=exc.start)
        ) from None


def parse(text: str, source: str) -> Any:
    """One JSON document; ``ValueError`` (with the line and column) when ``text`` is not,
    and a ``UsageError`` naming ``source`` when it is nested too deeply to read."""
    with nesting_checked(source):
        return json.loads(text)


def shown(value: Any) -> str:
    text = json.dumps(value) if _plain(value) else repr(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}…"


def _plain(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


class At:
    """A value found in a JSON document, with where it was found."""

    __slots__ = ("path", "source", "value")

    def __init__(self, value: Any, source: str, path: str = "") -> None:
        self.value = value
        self.source = source
        self.path = path

    def fail(self, problem: str) -> UsageError:
        where = f"{self.source}: {self.path}" if self.path else self.source
        return UsageError(f"{where}: {problem}")

    def _wrong(self, expected: str) -> UsageError:
        return self.fail(f"expected {expected}, got {shown(self.value)}")

    def __getitem__(self, key: str) -> At:
        """The member ``key`` of this object; an error when it is missing."""
        found = self.get(key)
        if found.value is None and key not in self.obj():
            raise found.fail("missing")
        return found

    def get(self, key: str) -> At:
        """The member ``key`` of this object, ``None`` when it is missing."""
        return At(self.obj().get(key), self.source, f"{self.path}.{key}" if self.path else key)

    def has(self, key: str) -> bool:
        return key in self.obj()

    @property
    def missing(self) -> bool:
        return self.value is None

    def obj(self) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self._wrong("an object")
        return self.value

    def list(self) -> list[Any]:
        if not isinstance(self.value, list):
            raise self._wrong("a list")
        return self.value

    def items(self, *, optional: bool = True) -> Iterator[At]:
        """Each element of this list (none when the value is ``null`` and ``optional``)."""
        if optional and self.value is None:
            return
        for index, value in enumerate(self.list()):
            yield At(value, self.source, f"{self.path}[{index}]")

    def text(self) -> str:
        if not isinstance(self.value, str):
            raise self._wrong("a string")
        try:
            self.value.encode("utf-8")
        except UnicodeEncodeError:
            raise self.fail("not valid Unicode (a lone surrogate)") from None
        return self.value

    def integer(self, low: int = INT64[0], high: int = INT64[1]) -> int:
        """A whole number, written as a JSON number or a string of decimal digits (as
        protobuf's JSON mapping writes 64-bit integers), between ``low`` and ``high``."""
        value = self.value
        if isinstance(value, str) and 0 < len(value) <= 20 and value.lstrip("-").isascii():
            digits = value.removeprefix("-")
            value = int(value) if digits.isdigit() else value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._wrong("a whole number")
        if not low <= value <= high:
            raise self.fail(f"{value} is out of range ({low} to {high})")
        return value

    def number(self, *, finite: bool = True) -> float:
        """A number, or a string holding one (protobuf's JSON mapping of a double, where
        ``"NaN"`` and ``"Infinity"`` are allowed unless ``finite``)."""
        value = self.value
        if isinstance(value, str) and 0 < len(value) <= 40:
            with contextlib.suppress(ValueError):
                value = float(value)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self._wrong("a number")
        number = float(value) if isinstance(value, float) or abs(value) < 1e308 else math.inf
        if finite and not math.isfinite(number):
            raise self.fail(f"{shown(self.value)} is not a finite number")
        return number

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            raise self._wrong("true or false")
        return self.value
