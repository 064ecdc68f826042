"""The report's colours, shared by the page, its plots and the terminal. A kind's colour
is its spec's (:func:`latdoc.report.names.kind_colour`).

Mid-tone hues read on both white and near-black, so one palette serves the light
and the dark page and any terminal background.
"""

from __future__ import annotations

PHASE_COLOURS = {
    "queue": "#9aa1aa",
    "client": "#b07cc6",
    "dns": "#8b6ee0",
    "connect": "#e6843f",
    "proxy_connect": "#c4623a",
    "tls": "#d9a521",
    "send": "#33a9bb",
    "wait": "#4a80e0",
    "first_token": "#d95892",
    "reasoning": "#b36bc9",
    "stream": "#46a85c",
}

STEP_COLOURS = ("#4a80e0", "#e6843f", "#46a85c", "#8b6ee0", "#d95892", "#33a9bb")

ERROR_COLOUR = "#d64545"
"""Failed requests in the plots."""
