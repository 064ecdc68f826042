"""``latdoc watch``: a cold short, a warm short and a long request on a schedule, kept
as one run under a name and resumed by it.

- ``send``: the schedule and its ticks, within a budget;
- ``run``: the watch kept as a run, resumed by name.

The watch is read back by the clock in the core (:func:`latdoc.pipeline.watch_clock`),
since a diagnosis reads the newest watch of its endpoint too.
"""

from latdoc.features.watch.run import (
    DURATION_S,
    MAX_REQUESTS,
    WatchRun,
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
    "DURATION_S",
    "EVERY_S",
    "LONG_TOKENS",
    "MAX_REQUESTS",
    "REQUESTS_PER_TICK",
    "SHORT_TOKENS",
    "WatchPlan",
    "WatchResult",
    "WatchRun",
    "WatchTooFast",
    "watch_endpoint",
    "watch_name",
]
