"""Read the kernel's view of a TCP connection (Linux ``TCP_INFO``).

Offsets follow ``struct tcp_info`` in ``linux/tcp.h``; fields that an older
kernel does not return are reported as ``None``. On other platforms every
function returns ``None``.
"""

from __future__ import annotations

import socket
import struct
import sys
from dataclasses import dataclass
from typing import Any

from latdoc.records import TcpInfo

_TCP_INFO = getattr(socket, "TCP_INFO", 11)
_BUFSIZE = 232
_IS_LINUX = sys.platform.startswith("linux")

_U8 = struct.Struct("=B")
_U32 = struct.Struct("=I")
_U64 = struct.Struct("=Q")
_OFF_RETRANSMITS = 2
_OFF_UNACKED = 24
_OFF_LOST = 32
_OFF_RTT = 68
_OFF_RTTVAR = 72
_OFF_SND_CWND = 80
_OFF_TOTAL_RETRANS = 100
_OFF_BYTES_ACKED = 120
_OFF_BYTES_RECEIVED = 128
_OFF_DATA_SEGS_IN = 152
_OFF_DATA_SEGS_OUT = 156
_OFF_RCV_OOOPACK = 224
_OFF_NOTSENT = 144
_OFF_MIN_RTT = 148


@dataclass(frozen=True, slots=True)
class SendState:
    """How much of what was written to the socket the peer has not yet acknowledged."""

    unacked_segments: int
    notsent_bytes: int | None

    def delivered(self, baseline: int = 0) -> bool:
        """Everything is on the wire and at most the last two segments await an ACK.

        The ACK of the last segments is no clock: a receiver with nothing to send
        acknowledges every second full-sized segment at once, but may hold the ACK
        of one or two small trailing segments (a request's headers and body are
        often exactly that) for up to 40 ms. ACKs before them are sent at once, so
        this condition marks the end of an upload to within two segments'
        transmission time, and a request that fits in two segments is delivered
        as soon as it is on the wire. ``baseline`` counts segments that were
        already unacknowledged before the request was written (the TLS Finished
        message on a new connection): they are not the request's.
        """
        return self.unacked_segments <= 2 + baseline and not self.notsent_bytes


def _raw(sock: Any) -> bytes | None:
    if not _IS_LINUX or sock is None:
        return None
    try:
        data: bytes = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, _BUFSIZE)
    except (OSError, ValueError):
        return None
    return data


def _u8(data: bytes, offset: int) -> int | None:
    if len(data) < offset + 1:
        return None
    value: int = _U8.unpack_from(data, offset)[0]
    return value


def _u32(data: bytes, offset: int) -> int | None:
    if len(data) < offset + 4:
        return None
    value: int = _U32.unpack_from(data, offset)[0]
    return value


def _u64(data: bytes, offset: int) -> int | None:
    if len(data) < offset + 8:
        return None
    value: int = _U64.unpack_from(data, offset)[0]
    return value


def send_state(sock: Any) -> SendState | None:
    """How much of what was written is still unsent or unacknowledged."""
    data = _raw(sock)
    if data is None:
        return None
    unacked = _u32(data, _OFF_UNACKED)
    if unacked is None:
        return None
    return SendState(unacked_segments=unacked, notsent_bytes=_u32(data, _OFF_NOTSENT))


def read_tcp_info(sock: Any) -> TcpInfo | None:
    """Kernel RTT and its variance, retransmissions and loss, and byte counters, or
    ``None`` where unavailable."""
    data = _raw(sock)
    if data is None:
        return None
    rtt = _u32(data, _OFF_RTT)
    rttvar = _u32(data, _OFF_RTTVAR)
    cwnd = _u32(data, _OFF_SND_CWND)
    retrans = _u32(data, _OFF_TOTAL_RETRANS)
    if rtt is None or rttvar is None or cwnd is None or retrans is None:
        return None
    return TcpInfo(
        rtt_us=rtt,
        rttvar_us=rttvar,
        min_rtt_us=_u32(data, _OFF_MIN_RTT),
        retransmits=retrans,
        snd_cwnd=cwnd,
        bytes_acked=_u64(data, _OFF_BYTES_ACKED),
        bytes_received=_u64(data, _OFF_BYTES_RECEIVED),
        lost=_u32(data, _OFF_LOST),
        backoff_retransmits=_u8(data, _OFF_RETRANSMITS),
        data_segments_out=_u32(data, _OFF_DATA_SEGS_OUT),
        data_segments_in=_u32(data, _OFF_DATA_SEGS_IN),
        out_of_order_in=_u32(data, _OFF_RCV_OOOPACK),
    )
