"""A user-space point-to-point link between two TUN devices, with known impairments.

Whole IP packets read from one TUN device are written to the other after passing,
per direction, through: random loss, a bounded queue served at the rate limit
(packets that find it full are dropped), then a one-way delay with jitter. The
jitter of each packet is uniform in ``[-jitter, +jitter]``; a packet never
overtakes the one before it (as on a real path), so each direction is a FIFO of
``(due time, packet)`` served on the monotonic clock; packets close together
therefore see somewhat more than ``delay_ms`` on average when there is jitter.

This module holds the settings, the impairment model (:class:`Direction`,
:class:`Link`), the TUN device set-up and :func:`control`, the client of a running
link's control socket. The link runs as its own process
(:mod:`latdoc.lab.net._link_daemon`), started by :class:`latdoc.lab.net.LabNet`
inside the server namespace with both TUN file descriptors inherited; its event
loop also serves the lab DNS server (:mod:`latdoc.lab.net._dns`) and the control
socket through which the settings change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import random
import socket
import struct
import subprocess
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from latdoc.errors import LabError, UsageError
from latdoc.i18n import Message

__all__ = [
    "LATE_BUCKETS_MS",
    "DirectionStats",
    "Link",
    "LinkLag",
    "LinkSettings",
    "LinkStats",
    "configure_tun",
    "control",
    "open_tun",
]

_TUNSETIFF = 0x400454CA
_IFF_TUN = 0x0001
_IFF_NO_PI = 0x1000
_MAX_PACKET = 65535
_READS_PER_WAKE = 64
_MAX_IN_FLIGHT = 100_000

LATE_BUCKETS_MS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0)
"""The lateness thresholds the link counts packets over (:class:`LinkLag`)."""

CONTROL_MESSAGE_BYTES = 65536
"""The largest request or answer on the control socket (one ``SOCK_SEQPACKET`` message)."""


@dataclass(frozen=True)
class LinkSettings:
    """Impairments of the link, the same in each direction unless ``up_rate_kbit`` is set.

    ``delay_ms`` is one way (the round trip adds twice that), ``rate_kbit`` counts
    IP bytes in kbit/s (``None``: unlimited) and ``up_rate_kbit`` overrides it for
    client→server; ``loss`` is the probability that a packet is lost, per
    direction; ``queue_packets`` bounds the packets waiting for the rate limit.
    ``drop_ipv6`` drops every IPv6 packet without a word, as a broken IPv6 route
    does: a connection to the server's IPv6 address waits until it times out.
    """

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    rate_kbit: float | None = None
    up_rate_kbit: float | None = None
    loss: float = 0.0
    queue_packets: int = 1000
    drop_ipv6: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.delay_ms <= 60_000:
            raise UsageError(
                Message("delay must be 0 to 60000 ms, got {delay_ms:g}", delay_ms=self.delay_ms)
            )
        if not 0 <= self.jitter_ms <= 60_000:
            raise UsageError(
                Message("jitter must be 0 to 60000 ms, got {jitter_ms:g}", jitter_ms=self.jitter_ms)
            )
        for rate in (self.rate_kbit, self.up_rate_kbit):
            if rate is not None and not 1 <= rate <= 100_000_000:
                raise UsageError(
                    Message("a rate limit must be 1 to 1e8 kbit/s, got {rate:g}", rate=rate)
                )
        if not 0 <= self.loss < 1:
            raise UsageError(
                Message("loss is a probability from 0 to below 1, got {loss:g}", loss=self.loss)
            )
        if not 1 <= self.queue_packets <= 1_000_000:
            raise UsageError(
                Message(
                    "the queue holds 1 to 1000000 packets, got {queue_packets}",
                    queue_packets=self.queue_packets,
                )
            )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, fields: dict[str, Any]) -> LinkSettings:
        return cls(**fields)


@dataclass(frozen=True)
class DirectionStats:
    """Packets of one direction: delivered, lost at random, dropped by the full queue,
    and IPv6 packets dropped by the black-holed route."""

    delivered: int
    delivered_bytes: int
    lost: int
    dropped: int
    blackholed: int = 0


@dataclass(frozen=True)
class LinkLag:
    """How late the link itself was, counted since it started (both directions).

    A packet is *late* by the time between when it was due (its arrival plus the
    delay, the jitter and the rate's queue) and when the link wrote it: time the link
    process spent waiting for a core, or asleep past its timer. ``late_over[i]`` counts
    the packets later than ``LATE_BUCKETS_MS[i]``; ``waited_ms`` is the link process's
    own wait for a core while it was ready to run (Linux ``schedstat``; 0 where the
    kernel keeps no such account), which also covers a packet read late. The
    difference of two readings (:meth:`since`) is what happened between them, so a
    test can tell the product measuring wrong from the lab forwarding late.
    ``priority`` says how the link process is scheduled: ``fifo`` (real time),
    ``raised`` (a negative nice value) or ``normal``.
    """

    packets: int = 0
    late_total_ms: float = 0.0
    late_over: tuple[int, ...] = (0,) * len(LATE_BUCKETS_MS)
    late_max_ms: float = 0.0
    waited_ms: float = 0.0
    priority: str = "normal"

    def since(self, before: LinkLag) -> LinkLag:
        """The lag between the reading ``before`` and this one (``late_max_ms`` is the
        bound :attr:`max_late_ms` gives for the interval)."""
        over = tuple(a - b for a, b in zip(self.late_over, before.late_over, strict=True))
        interval = LinkLag(
            self.packets - before.packets,
            self.late_total_ms - before.late_total_ms,
            over,
            self.late_max_ms,
            self.waited_ms - before.waited_ms,
            self.priority,
        )
        return dataclasses.replace(interval, late_max_ms=interval.max_late_ms)

    @property
    def max_late_ms(self) -> float:
        """An upper bound on the latest packet: the lowest threshold no packet passed
        (the latest ever seen, when some passed them all)."""
        for threshold, count in zip(LATE_BUCKETS_MS, self.late_over, strict=True):
            if count == 0:
                return min(threshold, self.late_max_ms) if self.packets else 0.0
        return self.late_max_ms

    @property
    def held_ms(self) -> float:
        """The most the link can have added to one packet's trip in this interval: the
        latest packet's lateness after it was read, plus the process's wait for a core
        (a packet read late waited at most that long before it was read)."""
        return self.max_late_ms + self.waited_ms

    @classmethod
    def from_dict(cls, fields: dict[str, Any]) -> LinkLag:
        return cls(**{**fields, "late_over": tuple(fields["late_over"])})


@dataclass(frozen=True)
class LinkStats:
    """Counters since the link started; ``up`` is client→server."""

    up: DirectionStats
    down: DirectionStats
    dns_queries: int
    lag: LinkLag = LinkLag()

    @classmethod
    def from_dict(cls, fields: dict[str, Any]) -> LinkStats:
        lag = LinkLag.from_dict(fields["lag"]) if "lag" in fields else LinkLag()
        return cls(
            DirectionStats(**fields["up"]),
            DirectionStats(**fields["down"]),
            fields["dns_queries"],
            lag,
        )


def open_tun(name: str) -> int:
    """Create TUN device ``name`` (no packet info header); return its non-blocking fd."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH22x", name.encode(), _IFF_TUN | _IFF_NO_PI))
    except OSError as exc:
        os.close(fd)
        raise LabError(
            Message(
                "cannot create TUN device {name!r}: {strerror}", name=name, strerror=exc.strerror
            )
        ) from exc
    return fd


def configure_tun(
    namespace: str,
    device: str,
    address: str,
    peer: str,
    address6: str | None = None,
    peer6: str | None = None,
) -> None:
    """Move TUN ``device`` into ``namespace`` as ``address``, point to point with ``peer``,
    and as ``address6`` with ``peer6`` over IPv6 when given."""
    commands = [
        ["link", "set", "dev", device, "netns", namespace],
        ["-n", namespace, "link", "set", "dev", device, "addrgenmode", "none"],
        ["-n", namespace, "address", "add", address, "peer", f"{peer}/32", "dev", device],
    ]
    if address6 is not None and peer6 is not None:
        add6 = ["address", "add", address6, "peer", f"{peer6}/128", "dev", device, "nodad"]
        commands.append(["-n", namespace, "-6", *add6])
    commands += [
        ["-n", namespace, "link", "set", "dev", device, "up"],
        ["-n", namespace, "link", "set", "dev", "lo", "up"],
    ]
    if address6 is not None and peer6 is not None:
        # The kernel routes an IPv6 peer address only once asked to.
        commands.append(["-n", namespace, "-6", "route", "add", f"{peer6}/128", "dev", device])
    for command in commands:
        result = subprocess.run(["ip", *command], capture_output=True, text=True, timeout=10)
        if result.returncode != 0:
            detail = result.stderr.strip() or f"exit code {result.returncode}"
            raise LabError(
                Message("ip {command}: {detail}", command=" ".join(command), detail=detail)
            )


class Direction:
    """One direction: loss, a queue served at the rate limit, then delay and jitter.

    At most 100,000 packets are in flight; more are dropped, so a long delay on a
    fast sender cannot exhaust memory.
    """

    def __init__(self, settings: LinkSettings, rate_kbit: float | None, rng: random.Random) -> None:
        self._rng = rng
        self._queue_ends: deque[float] = deque()
        self._in_flight: deque[tuple[float, bytes]] = deque()
        self._line_free = 0.0
        self._last_due = 0.0
        self.delivered = self.delivered_bytes = self.lost = self.dropped = self.blackholed = 0
        self.configure(settings, rate_kbit)

    def configure(self, settings: LinkSettings, rate_kbit: float | None) -> None:
        self._delay_s = settings.delay_ms / 1000
        self._jitter_s = settings.jitter_ms / 1000
        self._loss = settings.loss
        self._queue_packets = settings.queue_packets
        self._drop_ipv6 = settings.drop_ipv6
        self._bytes_per_s = None if rate_kbit is None else rate_kbit * 1000 / 8

    def admit(self, packet: bytes, now: float) -> None:
        """Take a packet that arrived at ``now``: lose it, drop it, or schedule it."""
        if self._drop_ipv6 and packet and packet[0] >> 4 == 6:
            self.blackholed += 1
            return
        if self._loss and self._rng.random() < self._loss:
            self.lost += 1
            return
        ends = self._queue_ends
        while ends and ends[0] <= now:
            ends.popleft()
        sent = now
        if len(self._in_flight) >= _MAX_IN_FLIGHT:
            self.dropped += 1
            return
        if self._bytes_per_s is not None:
            if len(ends) >= self._queue_packets:
                self.dropped += 1
                return
            sent = max(now, self._line_free) + len(packet) / self._bytes_per_s
            self._line_free = sent
            ends.append(sent)
        delay = self._delay_s
        if self._jitter_s:
            delay = max(0.0, delay + self._rng.uniform(-self._jitter_s, self._jitter_s))
        due = max(sent + delay, self._last_due)
        self._last_due = due
        self._in_flight.append((due, packet))

    def next_due(self) -> float | None:
        return self._in_flight[0][0] if self._in_flight else None

    def pop_due(self, now: float) -> Iterator[tuple[float, bytes]]:
        """The packets due by ``now``, in order, each with the time it was due."""
        in_flight = self._in_flight
        while in_flight and in_flight[0][0] <= now:
            due, packet = in_flight.popleft()
            self.delivered += 1
            self.delivered_bytes += len(packet)
            yield due, packet

    def stats(self) -> DirectionStats:
        return DirectionStats(
            self.delivered, self.delivered_bytes, self.lost, self.dropped, self.blackholed
        )


class Link:
    """Two TUN fds joined by an impaired :class:`Direction` each way."""

    def __init__(
        self, client_fd: int, server_fd: int, settings: LinkSettings, seed: int | None = None
    ) -> None:
        rng = random.Random(seed)
        self.client_fd = client_fd
        self.server_fd = server_fd
        self.settings = settings
        self.up = Direction(settings, settings.up_rate_kbit or settings.rate_kbit, rng)
        self.down = Direction(settings, settings.rate_kbit, rng)
        self.packets = 0
        self.late_total_s = 0.0
        self.late_max_s = 0.0
        self.late_over = [0] * len(LATE_BUCKETS_MS)

    def configure(self, settings: LinkSettings) -> None:
        self.settings = settings
        self.up.configure(settings, settings.up_rate_kbit or settings.rate_kbit)
        self.down.configure(settings, settings.rate_kbit)

    def on_readable(self, fd: int, now: float) -> None:
        direction = self.up if fd == self.client_fd else self.down
        for _ in range(_READS_PER_WAKE):
            try:
                packet = os.read(fd, _MAX_PACKET)
            except BlockingIOError:
                return
            if packet:
                direction.admit(packet, now)

    def next_due(self) -> float | None:
        dues = [d for d in (self.up.next_due(), self.down.next_due()) if d is not None]
        return min(dues) if dues else None

    def deliver(self, now: float, written: float | None = None) -> None:
        """Write every packet due by ``now``; ``written`` is the time they leave (the
        clock now, by default), from which each one's lateness is counted."""
        for direction, fd in ((self.up, self.server_fd), (self.down, self.client_fd)):
            for due, packet in direction.pop_due(now):
                with contextlib.suppress(OSError):
                    os.write(fd, packet)
                if written is None:
                    written = time.monotonic()
                self._count_late(written - due)

    def _count_late(self, late_s: float) -> None:
        self.packets += 1
        if late_s <= 0:
            return
        self.late_total_s += late_s
        self.late_max_s = max(self.late_max_s, late_s)
        late_ms = late_s * 1000
        for k, threshold in enumerate(LATE_BUCKETS_MS):
            if late_ms <= threshold:
                break
            self.late_over[k] += 1

    def lag(self, waited_ms: float, priority: str) -> LinkLag:
        """The lag counted so far, with the process's wait for a core and its priority."""
        return LinkLag(
            self.packets,
            self.late_total_s * 1000,
            tuple(self.late_over),
            self.late_max_s * 1000,
            waited_ms,
            priority,
        )


def control(path: str, message: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """Send one request to a running link's control socket and return its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            sock.sendall(json.dumps(message).encode())
            answer: dict[str, Any] = json.loads(sock.recv(CONTROL_MESSAGE_BYTES))
        except (OSError, ValueError) as exc:
            raise LabError(
                Message("the lab link does not answer on {path}: {exc}", path=path, exc=str(exc))
            ) from exc
    if not answer.get("ok"):
        raise LabError(
            Message(
                "the lab link refused {op!r}: {error}",
                op=message.get("op"),
                error=answer.get("error"),
            )
        )
    return answer
