"""Packet loss on the path, as the kernel counted it, per request.

``TCP_INFO`` counts over a connection's whole life (:class:`~latdoc.records.TcpInfo`),
read when each request ends: the segments the client retransmitted and the data
segments it sent, which give the loss on the way to the server; and the segments that
reached the client out of order and the data segments it received, the only sign the
client has of loss on the way back (a segment lost, those behind it arrive before its
resend; every one of them counts, so this share is above the loss rate that caused it).
A request's own counts are the difference from the request before it on the same
connection (all of it on a new connection): requests on one HTTP/1.1 connection follow
one another, so the difference is what this request's exchange sent and received.

A lossy path resends and its round trip varies (``rttvar``); a far server has a long
round trip and resends nothing; a server that pauses leaves both alone. So a pause in
a stream whose connection saw loss meanwhile is the path's, not the server's; and on a
lossy path, so is a pause no longer than one retransmission timeout
(:attr:`Loss.recovery_ms`) where no counter moved: a segment lost with nothing behind
it is resent by a timer, and neither side's out-of-order count sees it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from latdoc.analysis.policy import LOSS_MIN_SEGMENTS, LOSSY_RETRANSMIT_SHARE, TCP_MIN_RTO_MS
from latdoc.analysis.stats import median_of
from latdoc.records import RequestTrace

__all__ = ["Counts", "Loss", "path_loss", "request_counts"]


@dataclass(frozen=True, slots=True)
class Counts:
    """One request's (or a run's) segments: retransmitted of sent, out of order of received."""

    retransmits: int = 0
    sent: int = 0
    out_of_order: int = 0
    received: int = 0

    @property
    def saw_loss(self) -> bool:
        return self.retransmits > 0 or self.out_of_order > 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.retransmits + other.retransmits,
            self.sent + other.sent,
            self.out_of_order + other.out_of_order,
            self.received + other.received,
        )

    def __sub__(self, other: Counts) -> Counts:
        return Counts(
            max(0, self.retransmits - other.retransmits),
            max(0, self.sent - other.sent),
            max(0, self.out_of_order - other.out_of_order),
            max(0, self.received - other.received),
        )


@dataclass(frozen=True, slots=True)
class Loss:
    """Segments lost over a run's requests, each way."""

    counts: Counts
    requests: int
    """Requests whose counters were read."""
    losing: int
    """Requests whose connection retransmitted or received out of order during them."""
    rttvar_ms: float | None
    """Median over those requests of the kernel's RTT variance."""
    rtt_ms: float | None
    """Median over those requests of the kernel's smoothed RTT."""

    @property
    def up_share(self) -> float | None:
        """The client's data segments retransmitted; None below :data:`LOSS_MIN_SEGMENTS`."""
        c = self.counts
        return c.retransmits / c.sent if c.sent >= LOSS_MIN_SEGMENTS else None

    @property
    def down_share(self) -> float | None:
        """Data segments received out of order; None below :data:`LOSS_MIN_SEGMENTS`."""
        c = self.counts
        return c.out_of_order / c.received if c.received >= LOSS_MIN_SEGMENTS else None

    @property
    def recovery_ms(self) -> float:
        """What one loss recovered by a retransmission timeout costs on this path: the
        kernel's timeout from the smoothed round trip and its variance (RFC 6298), at
        least :data:`TCP_MIN_RTO_MS`. A loss no counter on the client's side saw (a
        segment lost with nothing sent behind it) pauses a request by no more."""
        return max(TCP_MIN_RTO_MS, (self.rtt_ms or 0.0) + 4 * (self.rttvar_ms or 0.0))

    @property
    def lossy(self) -> bool:
        """Either share above :data:`LOSSY_RETRANSMIT_SHARE`, in more than one request."""
        shares = [s for s in (self.up_share, self.down_share) if s is not None]
        return self.losing >= 2 and any(s > LOSSY_RETRANSMIT_SHARE for s in shares)


def request_counts(traces: Sequence[RequestTrace]) -> list[Counts | None]:
    """Each request's own segment counts, in the order of ``traces``; ``None`` where the
    kernel's counters were not read."""
    last: dict[int, Counts] = {}
    out: list[Counts | None] = []
    for t in traces:
        info = t.tcp_info
        if info is None or info.data_segments_out is None or info.data_segments_in is None:
            out.append(None)
            continue
        now = Counts(
            info.retransmits, info.data_segments_out, info.out_of_order_in or 0,
            info.data_segments_in,
        )  # fmt: skip
        before = Counts()
        if not t.new_connection and t.connection_id is not None:
            before = last.get(t.connection_id, Counts())
        if t.connection_id is not None:
            last[t.connection_id] = now
        out.append(now - before)
    return out


def path_loss(traces: Sequence[RequestTrace]) -> Loss | None:
    """What the successful requests of ``traces`` lost; ``None`` when no counter was read."""
    ok = [t for t in traces if t.ok]
    counted = [(t, c) for t, c in zip(ok, request_counts(ok), strict=True) if c is not None]
    if not counted:
        return None
    total = Counts()
    for _, c in counted:
        total = total + c
    return Loss(
        counts=total,
        requests=len(counted),
        losing=sum(1 for _, c in counted if c.saw_loss),
        rttvar_ms=median_of(t.tcp_info.rttvar_us / 1000 for t, _ in counted if t.tcp_info),
        rtt_ms=median_of(t.tcp_info.rtt_us / 1000 for t, _ in counted if t.tcp_info),
    )
