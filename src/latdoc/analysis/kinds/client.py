"""``client``: the measuring client's own delay, never the server's time. Its
event loop running late, requests held back before they reach the wire, and waits
for a free connection in its pool, each with its threshold.
"""

from __future__ import annotations

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.policy import CLIENT_DELAY_MS
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind

__all__ = ["CLIENT_DELAY_MS", "CLIENT_LOOP_LAG_MS", "CLIENT_QUEUE_MS", "SPEC", "client"]

CLIENT_QUEUE_MS = 10.0
CLIENT_LOOP_LAG_MS = 20.0


def client(f: Facts) -> Finding | None:
    lag = f.loop_lag_ms
    if lag is not None and lag > CLIENT_LOOP_LAG_MS:
        return Finding(
            Kind.CLIENT,
            N_("The measuring client's event loop runs late"),
            Message(
                "median worst event-loop lag per request {lag:.0f} ms > {limit:.0f} ms: "
                "the client machine is overloaded, and every timestamp is late by as much",
                lag=lag,
                limit=CLIENT_LOOP_LAG_MS,
            ),
            {"loop_lag_ms": lag},
            share_ms=lag,
            n=len(f.measured),
            confidence=confidence(len(f.measured), lag / CLIENT_LOOP_LAG_MS - 1),
        )
    delay = f.client_delay_ms
    if delay is not None and delay > CLIENT_DELAY_MS:
        return Finding(
            Kind.CLIENT,
            N_("The measuring client holds requests back before they leave"),
            Message(
                "median client delay before the request reached the wire {delay:.0f} ms > "
                "{limit:.0f} ms: its event loop was busy; the server's TTFT is counted from "
                "the wire without it",
                delay=delay,
                limit=CLIENT_DELAY_MS,
            ),
            {"client_delay_ms": delay},
            share_ms=delay,
            n=len(f.measured),
            confidence=confidence(len(f.measured), delay / CLIENT_DELAY_MS - 1),
        )
    queue = f.load["client_queue_ms"]
    if queue is None or queue <= CLIENT_QUEUE_MS:
        return None
    return Finding(
        Kind.CLIENT,
        N_("Requests wait for a free connection in the client"),
        Message(
            "median wait for a pooled connection {wait:.0f} ms > {limit:.0f} ms",
            wait=queue,
            limit=CLIENT_QUEUE_MS,
        ),
        {"pool_wait_ms": queue},
        share_ms=queue,
        n=int(f.load["sequential_n"] or 0),
        confidence=confidence(int(f.load["sequential_n"] or 0), queue / CLIENT_QUEUE_MS - 1),
    )


SPEC = KindSpec(
    Kind.CLIENT,
    N_("Client"),
    N_("the pool or event loop holds requests back"),
    colour="#33a9bb",
    rule=client,
    before_first_token=True,
)
