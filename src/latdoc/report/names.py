"""Words and numbers every renderer shares: the kinds' names, durations, evidence values."""

from __future__ import annotations

from collections.abc import Mapping

from latdoc.model import Kind

KIND_NAMES: Mapping[Kind, tuple[str, str]] = {
    Kind.NETWORK_SETUP: ("Network setup", "DNS, TCP and TLS handshakes, connections not reused"),
    Kind.NETWORK_PATH: ("Network path", "round-trip time and bandwidth to the server"),
    Kind.INPUT_LENGTH: ("Input length", "prefill grows with the prompt"),
    Kind.QUEUEING: ("Server queueing", "server-side wait that follows load, not length"),
    Kind.DECODE: ("Decode", "slow generation or long outputs"),
    Kind.REASONING: ("Reasoning", "the model thinks before its first answer token"),
    Kind.STALLS: ("Mid-stream stalls", "pauses in the middle of the stream"),
    Kind.BUFFERING: ("Buffered stream", "a proxy or gateway holds the stream back"),
    Kind.CLIENT: ("Client", "the pool or event loop holds requests back"),
    Kind.ERRORS: ("Errors", "requests fail: refused, rate-limited, timed out or cut off"),
    Kind.HEALTHY: ("Healthy", "no kind of slow stands out"),
}
"""Each kind's short name and what it means, in the user's words."""


def kind_name(kind: Kind) -> str:
    """``Input length (prefill grows with the prompt)``."""
    short, meaning = KIND_NAMES[kind]
    return f"{short} ({meaning})"


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
