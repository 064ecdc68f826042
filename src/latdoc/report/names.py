"""Words and numbers every renderer shares: the kinds' names (from their specs), durations,
evidence values."""

from __future__ import annotations

from latdoc.analysis.kinds import spec_of
from latdoc.model import Kind


def kind_short(kind: Kind) -> str:
    """``Input length``: the kind's name as every report shows it (its spec's)."""
    return spec_of(kind).name


def kind_name(kind: Kind) -> str:
    """``Input length (prefill grows with the prompt)``."""
    spec = spec_of(kind)
    return f"{spec.name} ({spec.meaning})"


def kind_colour(kind: Kind) -> str:
    """The kind's colour in the terminal, the page and the plots."""
    return spec_of(kind).colour


def pick_unit(value: float) -> str:
    """The unit a duration in ms reads best in: ``µs`` below 1 ms, ``s`` from 1 s."""
    if abs(value) < 1.0:
        return "µs"
    if abs(value) >= 1000.0:
        return "s"
    return "ms"


def format_ms(value: float | None, unit: str | None = None) -> str:
    """A duration in the unit that suits it (µs, ms or s), or ``-`` when not measured."""
    if value is None:
        return "-"
    unit = unit or pick_unit(value)
    if unit == "µs":
        return f"{value * 1000:.0f} µs"
    if unit == "s":
        return f"{value / 1000:.2f} s"
    return f"{value:.1f} ms"


def format_rate(value: float | None) -> str:
    """A rate (requests or tokens a second) to three figures or so, or ``-``."""
    if value is None:
        return "-"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def format_value(key: str, value: float) -> str:
    """An evidence number in its own unit: ``*_ms`` as a duration, ``*_s`` in seconds,
    counts as integers, anything else to three significant digits."""
    if key.endswith("_ms"):
        return format_ms(value)
    if key.endswith("_s"):
        return f"{value:g} s"
    if float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"
