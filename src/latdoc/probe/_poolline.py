"""When the pool had a connection for a request: the pool's wait, apart from the loop's.

A request that finds a free connection waits for the pool not at all, yet on a busy
event loop it can take tens of milliseconds to reach the wire: each step it takes
waits its turn on the loop. That is the client's own delay, not a wait for a
connection. httpcore does not say when it hands a request a connection, so the
session keeps the same first-come line itself: while fewer requests hold
connections than the pool has, a request is granted one at its start; otherwise
it is granted one when a holder leaves and it is first in line.

HTTP/2 multiplexes requests over a connection, so there the line grants every
request at its start: whatever holds it back before the wire is the client's.
"""

from __future__ import annotations

import collections

from latdoc.probe._recorder import Recorder, now_ns

__all__ = ["PoolLine"]


class PoolLine:
    """The pool's first-come line, stamping each request's ``pool_granted``."""

    def __init__(self, connections: int, multiplexed: bool) -> None:
        self.connections = max(1, connections)
        self.multiplexed = multiplexed
        self._holding = 0
        self._waiting: collections.deque[Recorder] = collections.deque()

    def enter(self, rec: Recorder) -> None:
        if self.multiplexed or self._holding < self.connections:
            self._holding += 1
            rec.pool_granted = rec.t0
        else:
            self._waiting.append(rec)

    def leave(self, rec: Recorder) -> None:
        if rec.pool_granted is None:
            self._waiting.remove(rec)
            return
        if self._waiting:
            self._waiting.popleft().pool_granted = now_ns()
        else:
            self._holding -= 1
