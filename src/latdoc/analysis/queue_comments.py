"""The server's queue as its ``: keep-alive`` comments tell it: :func:`keepalive_facts`.

DeepSeek's API, while a request waits to be scheduled, keeps its stream open with an
SSE comment, ``: keep-alive``, every few seconds; the headers went at once, so the
first byte comes early and the wait sits between it and the first token. The probe
keeps when the last of those comments came
(:attr:`~latdoc.records.RequestTrace.keepalive_wait_ms`): the request waited in the
server's queue at least that long. The queueing rule reads these numbers as the
server's own word for its queue (:func:`~latdoc.analysis.kinds.queueing.with_keepalive`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from latdoc.records import Sample, Step

__all__ = ["keepalive_facts"]


def keepalive_facts(
    samples: Sequence[Sample], alone: Sequence[Sample], lost: frozenset[int] = frozenset()
) -> dict[str, float | None]:
    """The wait in the server's queue its ``: keep-alive`` comments tell (0 for a request
    without one): the median of ``alone``, the requests sent one at a time at the load
    step's length; the mean of those sent together at the run's concurrency (as the
    queueing rule reads their first tokens: with fewer slots than requests most start
    at once, and their median sees no queue); and how many requests carried a comment.
    Empty when none did. ``lost`` (ids of traces), as for the load step, are left out."""
    ok = [s.trace for s in samples if s.trace.ok and id(s.trace) not in lost]
    kept = sum(1 for t in ok if t.keepalive_comments)
    if not kept:
        return {}
    waited = [
        w for s in alone if id(s.trace) not in lost and (w := s.trace.keepalive_wait_ms) is not None
    ]
    burst = [
        s.trace
        for s in samples
        if s.step == Step.LOAD and s.concurrency > 1 and s.trace.ok and id(s.trace) not in lost
    ]
    together = [w for t in burst if (w := t.keepalive_wait_ms) is not None]
    return {
        "keepalive_n": float(kept),
        "keepalive_alone_ms": statistics.median(waited) if waited else None,
        "keepalive_concurrent_ms": statistics.fmean(together) if together else None,
    }
