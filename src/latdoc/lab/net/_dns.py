"""The lab's DNS server: one host name, answered after a known delay.

It listens on UDP port 53 of the server address inside the server namespace and
answers an ``A`` query for the lab host name with that address, an ``AAAA`` query
with the IPv6 address when it has one, any other query type for the name with an
empty answer, and every other name with ``NXDOMAIN``, so
nothing falls back to real DNS. Each answer leaves ``delay_ms`` after its query
arrived. The queries and answers cross the impaired link, so a client in the
client namespace sees ``delay_ms`` plus one round trip of the link.

The link process (:mod:`latdoc.lab.net._link_daemon`) polls its socket and its timers; it has
no loop of its own. dnslib is imported by :class:`DnsServer`, not by this module.
:func:`write_resolver` points a namespace at it through
``/etc/netns/<namespace>/``, whose files ``ip netns exec`` mounts over ``/etc``:
``resolv.conf`` names the server, ``hosts`` holds localhost (and any names given)
and ``nsswitch.conf`` looks names up in files then DNS, so no other resolver answers.
"""

from __future__ import annotations

import contextlib
import heapq
import importlib
import itertools
import os
import re
import shutil
import socket

from latdoc.errors import UsageError
from latdoc.i18n import Message

__all__ = ["NETNS_ETC", "DnsServer", "answer", "remove_resolver", "write_resolver"]

NETNS_ETC = "/etc/netns"

_TTL_S = 0
_READS_PER_WAKE = 64
_MAX_PENDING = 10_000
_MAX_DATAGRAM = 4096


def answer(query: bytes, host_name: str, address: str, address6: str | None = None) -> bytes | None:
    """The wire-format answer to ``query``, or ``None`` when it is not a DNS query."""
    from dnslib import (  # type: ignore[import-untyped]
        AAAA,
        QTYPE,
        RCODE,
        RR,
        A,
        DNSError,
        DNSRecord,
    )

    try:
        request = DNSRecord.parse(query)
    except (DNSError, ValueError, IndexError):
        return None
    if request.header.qr or not request.questions:
        return None
    reply = request.reply()
    question = request.q
    if str(question.qname).rstrip(".").lower() == host_name:
        if question.qtype == QTYPE.A:
            reply.add_answer(RR(question.qname, QTYPE.A, rdata=A(address), ttl=_TTL_S))
        elif question.qtype == QTYPE.AAAA and address6 is not None:
            reply.add_answer(RR(question.qname, QTYPE.AAAA, rdata=AAAA(address6), ttl=_TTL_S))
    else:
        reply.header.rcode = RCODE.NXDOMAIN
    packed: bytes = reply.pack()
    return packed


class DnsServer:
    """A UDP socket answering the lab host name, each answer held back ``delay_ms``."""

    def __init__(
        self,
        bind: str,
        host_name: str,
        address: str,
        delay_ms: float = 0.0,
        address6: str | None = None,
    ) -> None:
        importlib.import_module("dnslib")
        self.host_name = host_name.rstrip(".").lower()
        self.address = address
        self.address6 = address6
        self.delay_s = 0.0
        self.set_delay(delay_ms)
        self.queries = 0
        self._sequence = itertools.count()
        self._pending: list[tuple[float, int, bytes, tuple[str, int]]] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.bind((bind, 53))
        except OSError:
            self._sock.close()
            raise
        self._sock.setblocking(False)

    def set_delay(self, delay_ms: float) -> None:
        if not 0 <= delay_ms <= 60_000:
            raise UsageError(
                Message("DNS delay must be 0 to 60000 ms, got {delay_ms:g}", delay_ms=delay_ms)
            )
        self.delay_s = delay_ms / 1000

    def fileno(self) -> int:
        return self._sock.fileno()

    def on_readable(self, now: float) -> None:
        """Read the queries waiting and schedule their answers."""
        for _ in range(_READS_PER_WAKE):
            try:
                query, peer = self._sock.recvfrom(_MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                continue
            reply = answer(query, self.host_name, self.address, self.address6)
            if reply is None or len(self._pending) >= _MAX_PENDING:
                continue
            self.queries += 1
            heapq.heappush(self._pending, (now + self.delay_s, next(self._sequence), reply, peer))

    def next_due(self) -> float | None:
        return self._pending[0][0] if self._pending else None

    def send_due(self, now: float) -> None:
        pending = self._pending
        while pending and pending[0][0] <= now:
            _, _, reply, peer = heapq.heappop(pending)
            with contextlib.suppress(OSError):
                self._sock.sendto(reply, peer)

    def close(self) -> None:
        self._sock.close()


def write_resolver(namespace: str, nameserver: str, hosts: dict[str, str] | None = None) -> None:
    """Make processes run with ``ip netns exec namespace`` resolve through ``nameserver``.

    ``hosts`` maps names to addresses that the namespace knows without asking DNS."""
    directory = os.path.join(NETNS_ETC, namespace)
    os.makedirs(directory, exist_ok=True)
    known = {"localhost": "127.0.0.1", **(hosts or {})}
    files = {
        "resolv.conf": f"nameserver {nameserver}\n",
        "hosts": "".join(f"{address}\t{name}\n" for name, address in known.items()),
    }
    with contextlib.suppress(FileNotFoundError), open("/etc/nsswitch.conf") as nsswitch:
        text = nsswitch.read()
        lookup = re.compile(r"^hosts:.*$", re.MULTILINE)
        files["nsswitch.conf"] = (
            lookup.sub("hosts: files dns", text)
            if lookup.search(text)
            else text + "hosts: files dns\n"
        )
    for file_name, content in files.items():
        with open(os.path.join(directory, file_name), "w") as out:
            out.write(content)


def remove_resolver(namespace: str) -> None:
    """Remove what :func:`write_resolver` wrote, and ``/etc/netns`` if it is left empty."""
    shutil.rmtree(os.path.join(NETNS_ETC, namespace), ignore_errors=True)
    with contextlib.suppress(OSError):
        os.rmdir(NETNS_ETC)
