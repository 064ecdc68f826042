"""The event loop a load's senders run on.

A level of hundreds of streams spends most of its CPU in the loop's own turns: every
read the arrivals thread queues wakes the loop, which runs the waker, then the task the
read resumes. uvloop (libuv's loop, written in Cython) takes those turns at well under
asyncio's cost, so the load runs on it where it is installed: the timing itself never
reads the loop's clock (every stamp is ``perf_counter_ns`` or the kernel's), so the
figures mean the same on either loop. ``LATDOC_LOOP=asyncio`` keeps asyncio's own loop,
as on a platform without uvloop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["LOOP_ENV", "loop_name", "run_sending"]

LOOP_ENV = "LATDOC_LOOP"
"""Set to ``asyncio`` to send on asyncio's own loop even where uvloop is installed."""

_T = TypeVar("_T")


def _factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    if os.environ.get(LOOP_ENV, "").strip().lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def loop_name() -> str:
    """The loop :func:`run_sending` runs on: ``uvloop`` or ``asyncio``."""
    return "asyncio" if _factory() is None else "uvloop"


def run_sending(main: Coroutine[Any, Any, _T]) -> _T:
    """Run ``main`` to its end on a new loop, as :func:`asyncio.run` does (Ctrl-C cancels
    it, and the loop is closed after), on uvloop where it is installed."""
    with asyncio.Runner(loop_factory=_factory()) as runner:
        return runner.run(main)
