"""The user's price: ``--price in=X,out=Y[,cached=Z]``, dollars per million tokens."""

from __future__ import annotations

import math

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.model import Price, Rates

__all__ = ["USER_SOURCE", "parse_price"]

USER_SOURCE = "--price"
"""The :attr:`~latdoc.model.Price.source` of a price the user gave."""

_KEYS = ("in", "out", "cached")
_FORM = N_("write in=X,out=Y[,cached=Z] in dollars per million tokens, e.g. in=2.5,out=10")


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
            raise UsageError(
                Message(
                    "{flag} {part!r} is not KEY=VALUE: {form}",
                    flag=flag,
                    part=part,
                    form=Message.of(_FORM),
                )
            )
        if key not in _KEYS:
            raise UsageError(
                Message("{flag}: unknown key {key!r}: use in, out and cached", flag=flag, key=key)
            )
        if key in given:
            raise UsageError(Message("{flag}: {key} is given twice", flag=flag, key=key))
        given[key] = _dollars(flag, key, value)
    missing = [key for key in ("in", "out") if key not in given]
    if missing:
        raise UsageError(
            Message(
                "{flag} needs {missing}: {form}",
                flag=flag,
                missing=Message.joined(N_(" and "), missing, names=True),
                form=Message.of(_FORM),
            )
        )
    rates = Rates(input=given["in"], output=given["out"], cached_input=given.get("cached"))
    return Price(rates=rates, source=flag)


def _dollars(flag: str, key: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or "_" in value:
        raise UsageError(
            Message(
                "{flag}: {key}={value!r} is not a number of dollars",
                flag=flag,
                key=key,
                value=value,
            )
        )
    if number < 0:
        raise UsageError(
            Message("{flag}: {key}={value} is negative", flag=flag, key=key, value=value)
        )
    return number
