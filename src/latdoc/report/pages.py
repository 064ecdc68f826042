"""What another feature's HTML page is made with: the page environment (the jinja2
templates shipped in :mod:`latdoc.report`, autoescaping on) and the plots those pages
draw as inline SVG. Importing this module loads matplotlib: a page renderer imports it
when it renders, not at the top of its module.
"""

from latdoc.report._html import environment
from latdoc.report._page_plots import (
    clock_heatmap_svg,
    conversation_svg,
    load_throughput_svg,
    load_tpot_svg,
    load_ttft_svg,
)

__all__ = [
    "clock_heatmap_svg",
    "conversation_svg",
    "environment",
    "load_throughput_svg",
    "load_tpot_svg",
    "load_ttft_svg",
]
