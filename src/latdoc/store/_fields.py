"""Typed reads from one JSON record, for the store's loaders: a missing or mistyped field
raises :class:`ValueError` naming it, which callers at the I/O boundary turn into a
:class:`~latdoc.errors.UsageError`. :func:`loads` reads a record's text as JSON whose
integers fit the store's (SQLite's 64-bit) columns."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

__all__ = ["Fields", "loads"]

INT64 = range(-(2**63), 2**63)
"""The integers an SQLite INTEGER column holds: what a record read from a file may
carry (:func:`loads`) and what a row written or migrated may (``rows``, ``schema``)."""


def _integer(text: str) -> int:
    value = int(text)
    if value not in INT64:
        raise ValueError(
            f"the integer {text[:24]}{'…' if len(text) > 24 else ''} is beyond 64 bits"
        )
    return value


def loads(text: str) -> Any:
    """``text`` as JSON; :class:`ValueError` for invalid JSON and for an integer no stored
    column can hold (which SQLite would refuse with an ``OverflowError`` once the rows
    are written)."""
    return json.loads(text, parse_int=_integer)


class Fields:
    """Typed reads from one record; a missing or mistyped field raises ValueError."""

    def __init__(self, record: Mapping[str, Any], where: str) -> None:
        if not isinstance(record, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(record).__name__}")
        self._record = record
        self._where = where

    def _get(self, name: str) -> Any:
        try:
            return self._record[name]
        except KeyError:
            raise ValueError(f"{self._where}: missing {name!r}") from None

    def _bad(self, name: str, expected: str) -> ValueError:
        value = self._record[name]
        return ValueError(f"{self._where}.{name}: expected {expected}, got {value!r}")

    def integer(self, name: str) -> int:
        value = self._get(name)
        if type(value) is not int:
            raise self._bad(name, "an integer")
        return value

    def opt_integer(self, name: str) -> int | None:
        return None if self._get(name) is None else self.integer(name)

    def has(self, name: str) -> bool:
        """Whether the record holds ``name``: fields added later are absent from older ones."""
        return name in self._record

    def number(self, name: str) -> float:
        value = self._get(name)
        if type(value) not in (int, float):
            raise self._bad(name, "a number")
        return float(value)

    def opt_number(self, name: str) -> float | None:
        return None if self._get(name) is None else self.number(name)

    def text(self, name: str) -> str:
        value = self._get(name)
        if not isinstance(value, str):
            raise self._bad(name, "a string")
        return value

    def opt_text(self, name: str) -> str | None:
        return None if self._get(name) is None else self.text(name)

    def flag(self, name: str) -> bool:
        value = self._get(name)
        if not isinstance(value, bool):
            raise self._bad(name, "true or false")
        return value

    def opt_flag(self, name: str) -> bool | None:
        return None if self._get(name) is None else self.flag(name)

    def mapping(self, name: str) -> Mapping[str, Any]:
        value = self._get(name)
        if not isinstance(value, Mapping):
            raise self._bad(name, "an object")
        return value

    def opt_mapping(self, name: str) -> Mapping[str, Any] | None:
        return None if self._get(name) is None else self.mapping(name)

    def integers(self, name: str) -> list[int]:
        value = self._get(name)
        if not isinstance(value, list) or any(type(v) is not int for v in value):
            raise self._bad(name, "a list of integers")
        return value

    def objects(self, name: str) -> list[Mapping[str, Any]]:
        value = self._get(name)
        if not isinstance(value, list) or any(not isinstance(v, Mapping) for v in value):
            raise self._bad(name, "a list of objects")
        return value

    def strings(self, name: str) -> list[str]:
        value = self._get(name)
        if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
            raise self._bad(name, "a list of strings")
        return value

    def opt_numbers(self, name: str) -> dict[str, float | None]:
        """An object of numbers, ``null`` where one was not measured."""
        value = self.mapping(name)
        for key, number in value.items():
            if not isinstance(key, str) or type(number) not in (int, float, type(None)):
                raise self._bad(name, "an object of numbers or nulls")
        return {k: None if v is None else float(v) for k, v in value.items()}

    def numbers(self, name: str) -> dict[str, float]:
        value = self.mapping(name)
        for key, number in value.items():
            if not isinstance(key, str) or type(number) not in (int, float):
                raise self._bad(name, "an object of numbers")
        return dict(value)

    def texts(self, name: str) -> dict[str, str]:
        value = self.mapping(name)
        if any(not isinstance(k, str) or not isinstance(v, str) for k, v in value.items()):
            raise self._bad(name, "an object of strings")
        return dict(value)

    def timestamp(self, name: str) -> datetime:
        text = self.text(name)
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            raise self._bad(name, "an ISO 8601 date and time") from None
