"""Packet loss on the path, as the kernel counted it: resent segments per request.

``TCP_INFO`` counts over a connection's whole life (:class:`~latdoc.records.TcpInfo`),
read when each request ends, the segments the client retransmitted, those that reached
it out of order (a segment before them was lost on the way to the client, and the
server resends it: the client sees the server's retransmissions only so), and the data
segments sent and received. A request's own share
is the difference from the request before it on the same connection (all of it on a
new connection): requests on one HTTP/1.1 connection follow one another, so the
difference is what this request's exchange sent and resent. A lossy path resends a
share of its segments and its round trip varies (``rttvar``); a far server has a long
round trip and resends nothing; a server that pauses leaves both alone. So a pause in a
stream whose connection resent segments meanwhile is the path's, not the server's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from latdoc.analysis.policy import LOSS_MIN_SEGMENTS, LOSSY_RETRANSMIT_SHARE
from latdoc.analysis.stats import median_of
from latdoc.records import RequestTrace

__all__ = ["Loss", "path_loss", "request_retransmits"]


@dataclass(frozen=True, slots=True)
class Loss:
    """Resent segments over a run's requests."""

    resent: int
    """The client's retransmissions and the segments that arrived out of order."""
    segments: int
    """Data segments sent and received."""
    requests: int
    """Requests whose counters were read."""
    retransmitting: int
    """Requests whose connection resent segments (either way) during them."""
    rttvar_ms: float | None
    """Median over those requests of the kernel's RTT variance."""
    rtt_ms: float | None
    """Median over those requests of the kernel's smoothed RTT."""

    @property
    def share(self) -> float:
        return self.resent / self.segments if self.segments else 0.0

    @property
    def lossy(self) -> bool:
        """At least :data:`LOSS_MIN_SEGMENTS` counted, more than
        :data:`LOSSY_RETRANSMIT_SHARE` of them resent, by more than one request."""
        return (
            self.segments >= LOSS_MIN_SEGMENTS
            and self.share > LOSSY_RETRANSMIT_SHARE
            and self.retransmitting >= 2
        )


def request_retransmits(traces: Sequence[RequestTrace]) -> list[tuple[int, int] | None]:
    """Each request's own resent segments and data segments (both ways), in the order of
    ``traces``; ``None`` where the kernel's counters were not read."""
    last: dict[int, tuple[int, int]] = {}
    out: list[tuple[int, int] | None] = []
    for t in traces:
        info = t.tcp_info
        if info is None or info.data_segments_out is None or info.data_segments_in is None:
            out.append(None)
            continue
        resent = info.retransmits + (info.out_of_order_in or 0)
        now = (resent, info.data_segments_out + info.data_segments_in)
        before = (0, 0) if t.new_connection or t.connection_id is None else None
        if before is None:
            before = last.get(t.connection_id or 0, (0, 0))
        if t.connection_id is not None:
            last[t.connection_id] = now
        out.append((max(0, now[0] - before[0]), max(0, now[1] - before[1])))
    return out


def path_loss(traces: Sequence[RequestTrace]) -> Loss | None:
    """What the successful requests of ``traces`` resent; ``None`` when no counter was read."""
    ok = [t for t in traces if t.ok]
    counted = [(t, c) for t, c in zip(ok, request_retransmits(ok), strict=True) if c is not None]
    if not counted:
        return None
    return Loss(
        resent=sum(c[0] for _, c in counted),
        segments=sum(c[1] for _, c in counted),
        requests=len(counted),
        retransmitting=sum(1 for _, c in counted if c[0] > 0),
        rttvar_ms=median_of(t.tcp_info.rttvar_us / 1000 for t, _ in counted if t.tcp_info),
        rtt_ms=median_of(t.tcp_info.rtt_us / 1000 for t, _ in counted if t.tcp_info),
    )
