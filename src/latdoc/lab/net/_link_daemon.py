"""The link process: the event loop that forwards packets, answers DNS and control.

``python -m latdoc.lab.net._link_daemon`` is what :class:`latdoc.lab.net.LabNet` starts
inside the server namespace, with both TUN file descriptors inherited. One loop
(:class:`_Daemon`) waits with ``select``, whose timeout has microsecond resolution,
on the TUN devices, the lab DNS server's socket (:mod:`latdoc.lab.net._dns`) and a Unix
control socket, and on their timers: packets leave the :class:`~latdoc.lab.net._link.Link`
when due, DNS answers when their delay has passed, and a control request
(:func:`latdoc.lab.net._link.control`) pings, reads the counters, changes the settings
while the link runs, or stops it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import select
import signal
import socket
import time
from types import FrameType
from typing import TYPE_CHECKING, Any

from latdoc.errors import LabError, UsageError
from latdoc.i18n import N_, Message
from latdoc.lab.net._link import CONTROL_MESSAGE_BYTES, Link, LinkSettings, LinkStats

if TYPE_CHECKING:
    from latdoc.lab.net._dns import DnsServer

__all__ = ["main"]

_MAX_WAIT_S = 0.25
_FIFO_PRIORITY = 10
"""The real-time priority the link asks for (1-99): above every normal process, so a
busy machine does not hold packets back, and low among real-time threads (the kernel's
own run at 50). The loop sleeps in ``select`` between packets, and the kernel caps real
time at 95% of a core, so a link that never slept could still not freeze the machine."""
_RAISED_NICE = -10
_MAX_LEAD_S = 0.001
_LEAD_SMOOTHING = 0.1
_CONTROL_CLIENTS = 8


class _Daemon:
    """The link's event loop: TUN fds, DNS socket, control socket, and their timers.

    ``select`` wakes a little after the timeout asked for (about 0.2 ms on a VM).
    The loop learns that lateness (``lead``, smoothed, at most 1 ms), asks to wake
    that much before a packet is due and sends what is due within ``lead`` of the
    wake-up, so packets leave on time on average instead of always late.
    """

    def __init__(self, link: Link, dns: DnsServer | None, control_path: str) -> None:
        self.link = link
        self.dns = dns
        self.control_path = control_path
        self.stopping = False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(control_path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(control_path)
        os.chmod(control_path, 0o600)
        self.listener.listen(_CONTROL_CLIENTS)
        self.listener.setblocking(False)
        self.clients: dict[int, socket.socket] = {}
        self.priority = "normal"

    def run(self, lifetime_s: float, parent_pid: int | None) -> None:
        end = time.monotonic() + lifetime_s
        link, dns = self.link, self.dns
        fixed = [link.client_fd, link.server_fd, self.listener.fileno()]
        if dns is not None:
            fixed.append(dns.fileno())
        next_check = 0.0
        lead = 0.0
        while not self.stopping:
            now = time.monotonic()
            if now >= next_check:
                if now >= end or (parent_pid is not None and os.getppid() != parent_pid):
                    return
                next_check = now + _MAX_WAIT_S
            wake = now + _MAX_WAIT_S
            for due in (link.next_due(), dns.next_due() if dns is not None else None):
                if due is not None:
                    wake = min(wake, due - lead)
            timeout = max(0.0, wake - now)
            readable, _, _ = select.select([*fixed, *self.clients], [], [], timeout)
            now = time.monotonic()
            if not readable and timeout > 0:
                late = min(now - wake, _MAX_LEAD_S)
                lead += (late - lead) * _LEAD_SMOOTHING
            for fd in readable:
                if fd in (link.client_fd, link.server_fd):
                    link.on_readable(fd, now)
                elif dns is not None and fd == dns.fileno():
                    dns.on_readable(now)
                elif fd == self.listener.fileno():
                    self._accept()
                else:
                    self._answer(fd)
            horizon = time.monotonic() + lead
            link.deliver(horizon)
            if dns is not None:
                dns.send_due(horizon)

    def _accept(self) -> None:
        with contextlib.suppress(BlockingIOError):
            client, _ = self.listener.accept()
            if len(self.clients) >= _CONTROL_CLIENTS:
                client.close()
                return
            client.setblocking(False)
            self.clients[client.fileno()] = client

    def _answer(self, fd: int) -> None:
        client = self.clients.pop(fd)
        with client:
            try:
                message = json.loads(client.recv(CONTROL_MESSAGE_BYTES))
                answer = self._handle(message)
            except (OSError, ValueError, TypeError, KeyError, LabError, UsageError) as exc:
                answer = {"ok": False, "error": str(exc)}
            with contextlib.suppress(OSError):
                client.send(json.dumps(answer).encode())

    def _handle(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message["op"]
        if op == "set":
            if message.get("link") is not None:
                self.link.configure(LinkSettings.from_dict(message["link"]))
            if message.get("dns_delay_ms") is not None:
                if self.dns is None:
                    raise LabError(N_("this link serves no DNS"))
                self.dns.set_delay(float(message["dns_delay_ms"]))
        elif op == "stop":
            self.stopping = True
        elif op != "ping" and op != "stats":
            raise LabError(Message("unknown request {op!r}", op=op))
        stats = LinkStats(
            self.link.up.stats(),
            self.link.down.stats(),
            self.dns.queries if self.dns is not None else 0,
            self.link.lag(_waited_ms(), self.priority),
        )
        return {"ok": True, "pid": os.getpid(), "stats": dataclasses.asdict(stats)}

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
        self.listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.control_path)
        if self.dns is not None:
            self.dns.close()
        for fd in (self.link.client_fd, self.link.server_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _raise_priority() -> str:
    """Schedule this process above the machine's other work where allowed: real time
    (``fifo``), else a negative nice value (``raised``), else as it was (``normal``).

    The link is the lab's clock: a packet it forwards late reads as a longer round
    trip, which no test could tell from the product measuring wrong. The lab runs as
    root, which may do either; a container may refuse both.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(_FIFO_PRIORITY))
        return "fifo"
    except (OSError, AttributeError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, 0, _RAISED_NICE)
        return "raised"
    except OSError:
        return "normal"


def _waited_ms() -> float:
    """How long this process has waited for a core while ready to run, in ms (the
    second field of Linux's ``/proc/self/schedstat``; 0 where there is none)."""
    try:
        with open("/proc/self/schedstat") as stat:
            return int(stat.read().split()[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return 0.0


def main(argv: list[str] | None = None) -> None:
    """Entry point of the link process; runs until stopped, the parent dies, or lifetime ends."""
    parser = argparse.ArgumentParser(prog="python -m latdoc.lab.net._link_daemon")
    parser.add_argument("--client-fd", type=int, required=True)
    parser.add_argument("--server-fd", type=int, required=True)
    parser.add_argument("--control", required=True)
    parser.add_argument("--settings", required=True, help="LinkSettings as JSON")
    parser.add_argument("--dns", help="JSON: bind, host_name, address, delay_ms")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--parent-pid", type=int)
    parser.add_argument("--lifetime-s", type=float, default=12 * 3600.0)
    args = parser.parse_args(argv)
    for fd in (args.client_fd, args.server_fd):
        os.set_blocking(fd, False)
    link = Link(
        args.client_fd, args.server_fd, LinkSettings.from_dict(json.loads(args.settings)), args.seed
    )
    dns = None
    if args.dns:
        from latdoc.lab.net._dns import DnsServer

        dns = DnsServer(**json.loads(args.dns))
    daemon = _Daemon(link, dns, args.control)
    daemon.priority = _raise_priority()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        daemon.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        daemon.run(args.lifetime_s, args.parent_pid)
    finally:
        daemon.close()


if __name__ == "__main__":
    main()
