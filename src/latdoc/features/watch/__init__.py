"""``latdoc watch``: a cold short, a warm short and a long request on a schedule, kept
as one run under a name and resumed by it.

- ``send``: the schedule and its ticks, within a budget;
- ``run``: the watch kept as a run, resumed by name.

The watch is read back by the clock in the core (:func:`latdoc.pipeline.watch_clock`),
since a diagnosis reads the newest watch of its endpoint too.
"""

from latdoc.features.watch.run import WatchRun, watch_endpoint
from latdoc.features.watch.send import (
    LONG_TOKENS,
    REQUESTS_PER_TICK,
    SHORT_TOKENS,
    WatchPlan,
    WatchResult,
    WatchTooFast,
)

__all__ = [
    "LONG_TOKENS",
    "REQUESTS_PER_TICK",
    "SHORT_TOKENS",
    "WatchPlan",
    "WatchResult",
    "WatchRun",
    "WatchTooFast",
    "watch_endpoint",
]
