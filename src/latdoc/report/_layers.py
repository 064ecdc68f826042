"""First token, layer by layer, shown only where the layers part.

A response's first output has several layers: the first byte (the headers), the
stream's first event (a control event such as ``response.created``, ``message_start``
or ``messageStart`` counts), the first reasoning, the first token (TTFT: the first
output the user can see), the first answer token and the first tool call. Most of the
time several coincide; a report names the first byte and the first token always, and
each other layer only where it parts from every layer shown by more than
:func:`~latdoc.analysis.policy.negligible` calls a difference (a reasoning model's
first answer well after its first thought, control events sent long before the first
token).
"""

from __future__ import annotations

from collections.abc import Mapping

from latdoc.analysis.policy import negligible
from latdoc.i18n import N_
from latdoc.i18n import gettext as _
from latdoc.records import RequestTrace
from latdoc.report.names import format_ms

__all__ = ["LAYERS", "PARTING", "distinct_layers", "layers_text", "trace_layers"]

LAYERS: tuple[tuple[str, str], ...] = (
    ("ttfb_ms", N_("first byte")),
    ("first_event_ms", N_("first event")),
    ("ttfr_ms", N_("first reasoning")),
    ("ttft_ms", N_("first token")),
    ("ttfa_ms", N_("first answer token")),
    ("first_tool_call_ms", N_("first tool call")),
)
"""Each layer's key (as the trace and the diagnosis's JSON name it) and label (in English:
translated where shown)."""
_ANCHORS = ("ttfb_ms", "ttft_ms")
PARTING = frozenset(key for key, _label in LAYERS if key not in _ANCHORS)
"""The layers shown only where they part from the others."""


def trace_layers(trace: RequestTrace) -> dict[str, float | None]:
    """One request's layers, in ms from its start."""
    return {
        "ttfb_ms": trace.ttfb_ms,
        "first_event_ms": trace.first_event_ms,
        "ttfr_ms": trace.ttfr_ms,
        "ttft_ms": trace.ttft_ms,
        "ttfa_ms": trace.ttfa_ms,
        "first_tool_call_ms": trace.first_tool_call_ms,
    }


def distinct_layers(marks: Mapping[str, float | None]) -> list[tuple[str, str, float]]:
    """(key, label, ms) of the layers to show, earliest first: the first byte and the
    first token where measured, and each other layer measured apart from all of them."""
    kept = {key: value for key in _ANCHORS if (value := marks.get(key)) is not None}
    for key, _label in LAYERS:
        value = marks.get(key)
        if value is None or key in kept:
            continue
        if all(not negligible(value - shown, max(value, shown)) for shown in kept.values()):
            kept[key] = value
    shown = [(key, label, kept[key]) for key, label in LAYERS if key in kept]
    return sorted(shown, key=lambda layer: layer[2])


def layers_text(marks: Mapping[str, float | None]) -> str | None:
    """``first output by layer: first byte 12 ms → first event 95 ms → …``, or ``None``
    when no layer parts from the first byte and the first token."""
    shown = distinct_layers(marks)
    if not any(key not in _ANCHORS for key, _, _ in shown):
        return None
    return _("first output by layer: ") + " → ".join(
        f"{_(label)} {format_ms(ms)}" for _key, label, ms in shown
    )
