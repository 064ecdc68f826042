"""The user's price: ``--price in=X,out=Y[,cached=Z]``, dollars per million tokens."""

from __future__ import annotations

import math

from latdoc.errors import UsageError
from latdoc.model import Price, Rates

__all__ = ["USER_SOURCE", "parse_price"]

USER_SOURCE = "--price"
"""The :attr:`~latdoc.model.Price.source` of a price the user gave."""

_KEYS = ("in", "out", "cached")
_FORM = "write in=X,out=Y[,cached=Z] in dollars per million tokens, e.g. in=2.5,out=10"


def parse_price(text: str, flag: str = USER_SOURCE) -> Price:
    """``in=2.5,out=10,cached=1.25`` as a :class:`~latdoc.model.Price`: dollars per
    million prompt, output and cached prompt tokens (``cached`` left out: a cached token
    costs as much as a fresh one), its source the ``flag`` it was given by.

    :class:`UsageError`, one line naming what is wrong, for a part that is not
    ``KEY=VALUE``, an unknown or repeated key, a value that is not a number or is
    negative, and ``in`` or ``out`` missing.
    """
    given: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, equals, value = (s.strip() for s in part.partition("="))
        if not equals:
            raise UsageError(f"{flag} {part!r} is not KEY=VALUE: {_FORM}")
        if key not in _KEYS:
            raise UsageError(f"{flag}: unknown key {key!r}: use in, out and cached")
        if key in given:
            raise UsageError(f"{flag}: {key} is given twice")
        given[key] = _dollars(flag, key, value)
    missing = [key for key in ("in", "out") if key not in given]
    if missing:
        raise UsageError(f"{flag} needs {' and '.join(missing)}: {_FORM}")
    rates = Rates(input=given["in"], output=given["out"], cached_input=given.get("cached"))
    return Price(rates=rates, source=flag)


def _dollars(flag: str, key: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or "_" in value:
        raise UsageError(f"{flag}: {key}={value!r} is not a number of dollars")
    if number < 0:
        raise UsageError(f"{flag}: {key}={value} is negative")
    return number
