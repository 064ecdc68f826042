"""Packets on the loopback interface, each with the kernel's receive stamp: the wire a
probe's stamps are held against.

``with LoopbackCapture(port) as capture:`` records every TCP segment from ``port`` (the
server's side) on ``lo`` through an ``AF_PACKET`` socket (``CAP_NET_RAW``: root), in a
thread, each stamped by the kernel (``SO_TIMESTAMPNS``) and moved onto the
``perf_counter_ns`` clock the probe stamps with. No library is used: the stdlib's raw
socket and ``struct`` read the few header fields needed (IPv4, TCP ports, payload).
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")


def can_capture() -> bool:
    """Whether this process may open a raw packet socket (root, or ``CAP_NET_RAW``)."""
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL)).close()
    except (PermissionError, OSError):
        return False
    return True


def _realtime_offset() -> int:
    """CLOCK_REALTIME minus perf_counter's clock, read between two monotonic reads."""
    before = time.perf_counter_ns()
    real = time.clock_gettime_ns(time.CLOCK_REALTIME)
    after = time.perf_counter_ns()
    return real - (before + after) // 2


@dataclass
class Segment:
    t_ns: int
    """The kernel's stamp, on the ``perf_counter_ns`` clock."""
    payload: bytes


@dataclass
class LoopbackCapture:
    port: int
    """The server's port: segments sent from it are kept."""
    segments: list[Segment] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self._sock.bind(("lo", 0))
        self._sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._offset = _realtime_offset()

    def __enter__(self) -> LoopbackCapture:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.05)  # the last segments' way through the tap
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def first(self, marker: bytes) -> Segment:
        """The first segment from the server whose payload holds ``marker``."""
        return next(s for s in self.segments if marker in s.payload)

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._sock], [], [], 0.02)
            if not ready:
                continue
            data, ancillary, _flags, address = self._sock.recvmsg(65_536, 64)
            if address[2] == socket.PACKET_OUTGOING:
                continue  # loopback shows each segment twice: keep its arrival
            stamp = next(
                (
                    _TIMESPEC.unpack(cdata[: _TIMESPEC.size])
                    for level, kind, cdata in ancillary
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS
                ),
                None,
            )
            segment = self._segment(data)
            if stamp is None or segment is None:
                continue
            seconds, nanoseconds = stamp
            t_ns = seconds * 1_000_000_000 + nanoseconds - self._offset
            self.segments.append(Segment(t_ns, segment))

    def _segment(self, frame: bytes) -> bytes | None:
        """The TCP payload of an IPv4 segment from :attr:`port` in an Ethernet frame
        (``lo`` frames carry a zeroed Ethernet header), else ``None``."""
        if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
            return None
        ip = frame[14:]
        header = (ip[0] & 0x0F) * 4
        if ip[9] != socket.IPPROTO_TCP:
            return None
        total = struct.unpack("!H", ip[2:4])[0]
        tcp = ip[header:total]
        source = struct.unpack("!H", tcp[0:2])[0]
        if source != self.port:
            return None
        payload = tcp[(tcp[12] >> 4) * 4 :]
        return payload or None


__all__ = ["LoopbackCapture", "Segment", "can_capture"]
