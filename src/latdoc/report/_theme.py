"""The report's colours, shared by the page, its plots and the terminal.

Mid-tone hues read on both white and near-black, so one palette serves the light
and the dark page and any terminal background.
"""

from __future__ import annotations

PHASE_COLOURS = {
    "queue": "#9aa1aa",
    "client": "#b07cc6",
    "dns": "#8b6ee0",
    "connect": "#e6843f",
    "tls": "#d9a521",
    "send": "#33a9bb",
    "wait": "#4a80e0",
    "first_token": "#d95892",
    "reasoning": "#b36bc9",
    "stream": "#46a85c",
}

KIND_COLOURS = {
    "network_setup": "#8b6ee0",
    "network_path": "#e6843f",
    "input_length": "#4a80e0",
    "queueing": "#d9a521",
    "decode": "#46a85c",
    "reasoning": "#b36bc9",
    "stalls": "#d95892",
    "buffering": "#a0673a",
    "client": "#33a9bb",
    "errors": "#d64545",
    "healthy": "#9aa1aa",
}

STEP_COLOURS = ("#4a80e0", "#e6843f", "#46a85c", "#8b6ee0", "#d95892", "#33a9bb")

ERROR_COLOUR = "#d64545"
"""Failed requests in the plots."""
