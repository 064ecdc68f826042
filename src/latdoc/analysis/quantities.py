"""A count, a number, a share or a duration as a user writes it, read and checked.

The one reading of each, for the command line (whose flags wrap these as their types,
so a mistake is argparse's ``argument --flag: …`` line) and for what the library reads
from text (an SLO's limits, a load's levels). A value that cannot be read, or is out
of range, is a :class:`~latdoc.errors.UsageError` saying what was expected.
"""

from __future__ import annotations

import re

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message

_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|µs|ms|s|m|h|d)?\s*")
_SECONDS = {"us": 1e-6, "µs": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise UsageError(Message("not a whole number: {text!r}", text=text)) from None
    if value < 1:
        raise UsageError(Message("must be at least 1, got {value}", value=value))
    return value


def non_negative_float(text: str) -> float:
    """A number of at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(Message("not a number: {text!r}", text=text)) from None
    if value < 0:
        raise UsageError(Message("must not be negative, got {value}", value=value))
    return value


def positive_float(text: str) -> float:
    """A number more than 0."""
    value = non_negative_float(text)
    if value == 0:
        raise UsageError(N_("must be more than 0"))
    return value


def share(text: str) -> float:
    """A share more than 0 and at most 1: ``0.05``, or a percentage, ``5%``."""
    value = positive_float(text.rstrip("%"))
    value = value / 100 if text.endswith("%") else value
    if value > 1:
        raise UsageError(Message("a share between 0 and 1 (or a percentage): {text!r}", text=text))
    return value


def duration(text: str) -> float:
    """Seconds from ``30s``, ``5m``, ``1.5h``, ``24h``, ``2d``, ``500ms`` or ``250us`` (a bare
    number is seconds), more than 0: every duration latdoc is given."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise UsageError(
            Message(
                "not a duration: {text!r} (give a number and a unit, e.g. 30s, 5m, 1h, 24h)",
                text=text,
            )
        )
    seconds = float(match.group(1)) * _SECONDS[match.group(2) or "s"]
    if seconds <= 0:
        raise UsageError(Message("must be more than 0, got {text!r}", text=text))
    return seconds
