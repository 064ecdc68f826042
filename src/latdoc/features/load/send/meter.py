"""What sending a level costs the client process, measured while the level runs.

One :class:`ClientMeter` per sender (a sweep, a replay): :meth:`~ClientMeter.start`
at the level's start, :meth:`~ClientMeter.observe` for each finished request,
:meth:`~ClientMeter.end` for the level's :class:`ClientLoad`.
"""

from __future__ import annotations

import time

from latdoc.analysis.stats import quantile
from latdoc.features.load.analysis import ClientLoad
from latdoc.probe import READER_LAG, LoopLagMonitor, now_ns
from latdoc.records import RequestTrace

_NS = 1_000_000_000


class ClientMeter:
    """The process's CPU over the level's wall time, how late its loop woke (a lag
    monitor of the level's own), how late the kernel-stamp reader read (every socket of
    the process), and how many of the level's token gaps were read together."""

    def __init__(self) -> None:
        self._lag: LoopLagMonitor | None = None
        self._start = (0, 0.0)
        self._gaps = 0
        self._together = 0

    def start(self) -> None:
        READER_LAG.take()
        self._lag = LoopLagMonitor()
        self._lag.start()
        self._start = (now_ns(), time.process_time())
        self._gaps = self._together = 0

    def observe(self, trace: RequestTrace) -> None:
        """Count ``trace``'s gaps between tokens, and those of two tokens that carry
        one stamp (read together)."""
        chunks = trace.chunks
        if len(chunks) > 1:
            self._gaps += len(chunks) - 1
            # Arrivals never go back, so tokens that share a stamp are neighbours.
            self._together += len(chunks) - trace.reads

    def end(self) -> ClientLoad:
        start_ns, cpu = self._start
        end_ns = now_ns()
        wall = max(1e-9, (end_ns - start_ns) / _NS)
        loop: list[float] = []
        if self._lag is not None:
            self._lag.stop()
            loop = self._lag.between(start_ns, end_ns)
            self._lag = None
        reader_ns = _p99(READER_LAG.take())
        return ClientLoad(
            cpu_share=(time.process_time() - cpu) / wall,
            loop_lag_ms_p99=_p99(loop),
            reader_lag_ms_p99=None if reader_ns is None else reader_ns / 1e6,
            read_together=self._together / self._gaps if self._gaps else None,
        )


def _p99(values: list[float] | list[int]) -> float | None:
    return quantile(values, 0.99) if values else None
