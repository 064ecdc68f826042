"""``latdoc watch``: a cold short, a warm short and a long request on a schedule, kept
as one run under a name and resumed by it, and read back by the clock.

- ``send``: the schedule and its ticks, within a budget;
- ``analysis``: the requests by the clock, in buckets over a cycle (the day) or plain
  time, and the peak against the rest;
- ``render``: the report by the clock as a terminal table, the ``latdoc.watch/1`` JSON
  document and an HTML page with a heat map;
- ``run``: the watch kept as a run, resumed by name, and read back by the clock
  (:func:`watch_clock`, cut as :func:`clock_spans` says).

After it has sent, a watch keeps its verdict by hour of day in its run, where a
diagnosis reads it through the core (:func:`latdoc.pipeline.watch_note`).
"""

from latdoc.features.watch.analysis import (
    DAY_S,
    HOUR_S,
    ClockPoint,
    ClockReport,
    clock_report,
)
from latdoc.features.watch.render import (
    WATCH_SCHEMA,
    ShownClock,
    clock_to_dict,
    duration_text,
    ended_sentences,
    render_clock,
    render_clock_html,
    started_sentence,
)
from latdoc.features.watch.run import (
    DURATION_S,
    HOUR_OF_DAY_TITLE,
    MAX_REQUESTS,
    ClockSpans,
    WatchClock,
    WatchRun,
    clock_spans,
    watch_clock,
    watch_endpoint,
    watch_name,
)
from latdoc.features.watch.send import (
    EVERY_S,
    LONG_TOKENS,
    REQUESTS_PER_TICK,
    SHORT_TOKENS,
    WatchPlan,
    WatchResult,
    WatchTooFast,
)

__all__ = [
    "DAY_S",
    "DURATION_S",
    "EVERY_S",
    "HOUR_OF_DAY_TITLE",
    "HOUR_S",
    "LONG_TOKENS",
    "MAX_REQUESTS",
    "REQUESTS_PER_TICK",
    "SHORT_TOKENS",
    "WATCH_SCHEMA",
    "ClockPoint",
    "ClockReport",
    "ClockSpans",
    "ShownClock",
    "WatchClock",
    "WatchPlan",
    "WatchResult",
    "WatchRun",
    "WatchTooFast",
    "clock_report",
    "clock_spans",
    "clock_to_dict",
    "duration_text",
    "ended_sentences",
    "render_clock",
    "render_clock_html",
    "started_sentence",
    "watch_clock",
    "watch_endpoint",
    "watch_name",
]
