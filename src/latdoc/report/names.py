"""Words and numbers every renderer shares: the kinds' names (from their specs), the
steps', the length curve's shapes, durations, evidence values; each word in the active
language (:mod:`latdoc.i18n`)."""

from __future__ import annotations

from collections.abc import Mapping

from latdoc.analysis.kinds import spec_of
from latdoc.i18n import N_, language, say, translate
from latdoc.model import Kind
from latdoc.records import Step

SHAPES: Mapping[str, str] = {
    "flat": N_("flat"),
    "linear": N_("linear"),
    "super-linear": N_("super-linear"),
}
"""The length curve's shapes (:attr:`latdoc.model.LengthCurve.shape`), to translate."""
STEPS: Mapping[str, str] = {
    Step.CALIBRATION: N_("calibration"),
    Step.NETWORK: N_("network"),
    Step.LENGTH: N_("length"),
    Step.LOAD: N_("load"),
    Step.RUN: N_("run"),
}
"""The steps a diagnosis's notes name, to translate; any other is shown as it is."""


def kind_short(kind: Kind) -> str:
    """``Input length``: the kind's name as every report shows it (its spec's)."""
    return translate(spec_of(kind).name)


def kind_name(kind: Kind) -> str:
    """``Input length (prefill grows with the prompt)``."""
    spec = spec_of(kind)
    return say("{name} ({meaning})", name=translate(spec.name), meaning=translate(spec.meaning))


def kind_word(kind: Kind) -> str:
    """The kind where a report lists kinds: in English its identifier (``network_setup``,
    as the JSON documents and the evidence name it), in another language its name, since
    an identifier is an English word."""
    return str(kind) if language() == "en" else kind_short(kind)


def step_word(step: str) -> str:
    """A step of the method as a note names it: ``load``, or its translation."""
    word = STEPS.get(step)
    return str(step) if word is None else translate(word)


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
