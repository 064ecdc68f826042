"""``client``: the measuring client's own delay, never the server's time. Its event
loop running late, requests held back before they reach the wire, and waits for a free
connection in its pool: each is the client's own delay before a request leaves, named
when it lies past the reference profile's slow edge of healthy (``client_delay_ms``:
100 ms, the point at which asyncio's debug mode reports a callback as slow). Its share
is the delay, its excess the part past the edge.
"""

from __future__ import annotations

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind

__all__ = ["SPEC", "client"]


def _finding(f: Facts, title: str, what: Message, key: str, ms: float, n: int) -> Finding:
    healthy = f.reference["client_delay_ms"]
    return Finding(
        Kind.CLIENT,
        title,
        Message(
            "{what}, past the slow edge of healthy, {edge:.0f} ms ({source})",
            what=what,
            edge=healthy.slow_edge,
            source=healthy.cited(),
        ),
        {key: ms},
        share_ms=ms,
        excess_ms=healthy.beyond_edge(ms),
        n=n,
        confidence=confidence(n, ms / max(healthy.slow_edge, 1e-9) - 1),
    )


def client(f: Facts) -> Finding | None:
    healthy = f.reference["client_delay_ms"]
    delay = f.client_delay_ms
    if delay is not None and healthy.is_slow(delay):
        return _finding(
            f,
            N_("The measuring client holds requests back before they leave"),
            Message(
                "median client delay before the request reached the wire {delay:.0f} ms: its "
                "event loop was busy; the server's TTFT is counted from the wire without it",
                delay=delay,
            ),
            "client_delay_ms",
            delay,
            len(f.measured),
        )
    # The loop's worst lag overstates what a request waited; it speaks only where the
    # delay itself was not measured.
    lag = f.loop_lag_ms
    if delay is None and lag is not None and healthy.is_slow(lag):
        return _finding(
            f,
            N_("The measuring client's event loop runs late"),
            Message(
                "median worst event-loop lag per request {lag:.0f} ms: the client machine is "
                "overloaded, and every timestamp is late by as much",
                lag=lag,
            ),
            "loop_lag_ms",
            lag,
            len(f.measured),
        )
    queue = f.load["client_queue_ms"]
    if queue is None or not healthy.is_slow(queue):
        return None
    return _finding(
        f,
        N_("Requests wait for a free connection in the client"),
        Message("median wait for a pooled connection {wait:.0f} ms", wait=queue),
        "pool_wait_ms",
        queue,
        int(f.load["sequential_n"] or 0),
    )


SPEC = KindSpec(
    Kind.CLIENT,
    N_("Client"),
    N_("the pool or event loop holds requests back"),
    colour="#33a9bb",
    rule=client,
    before_first_token=True,
)
