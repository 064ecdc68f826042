"""How late the client's own event loop runs: a client bottleneck must not be blamed on the server.

A task sleeps a fixed interval again and again; how much later than asked it
wakes up is the loop's lag at that moment. While the loop is late, every
timestamp the probe takes is late too, so a diagnosis reads the lag over each
request's lifetime before trusting its TTFT or inter-token gaps.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
from types import TracebackType

from latdoc.probe._recorder import now_ns

INTERVAL_S = 0.01
KEEP = 100_000
"""Readings kept (about 17 minutes at the interval): memory stays bounded."""


class LoopLagMonitor:
    """``async with LoopLagMonitor() as lag:`` … ``lag.max_between(start_ns, end_ns)``."""

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._times: collections.deque[int] = collections.deque(maxlen=KEEP)
        self._lags: collections.deque[float] = collections.deque(maxlen=KEEP)
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopLagMonitor:
        self.start()
        return self

    def start(self) -> None:
        """Start reading the lag on the running loop (:meth:`stop` ends it)."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        """Stop reading; the readings so far are kept."""
        if self._task is not None:
            self._task.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        interval_ns = int(self.interval_s * 1e9)
        while True:
            asked = now_ns()
            await asyncio.sleep(self.interval_s)
            woke = now_ns()
            self._times.append(woke)
            self._lags.append(max(0, woke - asked - interval_ns) / 1e6)

    def max_between(self, start_ns: int, end_ns: int) -> float | None:
        """The largest lag (ms) read from ``start_ns`` to one interval after ``end_ns``;
        ``None`` when no reading fell in that window."""
        lags = self.between(start_ns, end_ns + int(self.interval_s * 1e9))
        return max(lags) if lags else None

    def between(self, start_ns: int, end_ns: int) -> list[float]:
        """Every lag (ms) read from ``start_ns`` to ``end_ns``."""
        times = list(self._times)
        lo = bisect.bisect_left(times, start_ns)
        hi = bisect.bisect_right(times, end_ns)
        return list(self._lags)[lo:hi]
