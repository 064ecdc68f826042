"""The impaired network against the real probe: RTT, DNS, rate, loss, black-holed IPv6, TLS
resumption, ``set`` and cleanup.

The probe runs in the client namespace and the simulated endpoint in the server
namespace, so every number below crossed the user-space link. Tests that need root
and a TUN device skip with the reason; the link's scheduling and the DNS answers
are also checked on their own, without root.
"""

from __future__ import annotations

import dataclasses
import os
import random
from typing import Any

import pytest

from latdoc import LabError, UsageError
from latdoc.lab.net import (
    LabNet,
    LinkSettings,
    NetSettings,
    require_root,
)
from latdoc.lab.net._link import LATE_BUCKETS_MS, Direction, Link, LinkLag

try:
    require_root()
    ROOT_PROBLEM = ""
except LabError as exc:
    ROOT_PROBLEM = str(exc)


def test_direction_delays_in_order_with_jitter() -> None:
    direction = Direction(LinkSettings(delay_ms=10, jitter_ms=5), None, random.Random(1))
    for k in range(100):
        direction.admit(bytes([k]), k * 0.001)
    delivered = [packet for _, packet in direction.pop_due(1.0)]
    assert delivered == [bytes([k]) for k in range(100)]
    assert direction.next_due() is None


def test_direction_serializes_at_the_rate_and_drops_beyond_the_queue() -> None:
    settings = LinkSettings(rate_kbit=8, queue_packets=3)
    direction = Direction(settings, settings.rate_kbit, random.Random(1))
    for _ in range(5):
        direction.admit(b"x" * 1000, 0.0)
    assert direction.dropped == 2
    assert list(direction.pop_due(0.999)) == []
    assert [due for due, _ in direction.pop_due(2.0)] == pytest.approx([1.0, 2.0])
    assert direction.next_due() == pytest.approx(3.0)


def test_direction_loses_the_share_asked_for() -> None:
    direction = Direction(LinkSettings(loss=0.2), None, random.Random(7))
    for _ in range(10_000):
        direction.admit(b"x", 0.0)
    assert direction.lost / 10_000 == pytest.approx(0.2, abs=0.02)


def test_settings_reject_nonsense() -> None:
    with pytest.raises(UsageError, match="loss"):
        LinkSettings(loss=1.5)
    with pytest.raises(UsageError, match="rate"):
        LinkSettings(rate_kbit=0)
    with pytest.raises(UsageError, match="host name"):
        NetSettings(host_name="Not A Name")
    with pytest.raises(UsageError, match="name"):
        LabNet(name="no/slashes")


def test_dns_answers_the_lab_name_only() -> None:
    dnslib = pytest.importorskip("dnslib")
    from latdoc.lab.net._dns import answer

    def ask(name: str, qtype: str) -> Any:
        query = dnslib.DNSRecord.question(name, qtype).pack()
        reply = answer(query, "api.lab.test", "10.77.0.2")
        assert reply is not None
        return dnslib.DNSRecord.parse(reply)

    a = ask("API.lab.test", "A")
    assert [str(rr.rdata) for rr in a.rr] == ["10.77.0.2"]
    assert a.header.rcode == dnslib.RCODE.NOERROR
    aaaa = ask("api.lab.test", "AAAA")
    assert (aaaa.rr, aaaa.header.rcode) == ([], dnslib.RCODE.NOERROR)
    assert ask("example.com", "A").header.rcode == dnslib.RCODE.NXDOMAIN
    assert answer(b"not dns", "api.lab.test", "10.77.0.2") is None


def test_dns_answers_aaaa_with_the_ipv6_address_when_it_has_one() -> None:
    dnslib = pytest.importorskip("dnslib")
    from latdoc.lab.net._dns import answer

    query = dnslib.DNSRecord.question("api.lab.test", "AAAA").pack()
    reply = answer(query, "api.lab.test", "10.77.0.2", "fd77::2")
    assert reply is not None
    assert [str(rr.rdata) for rr in dnslib.DNSRecord.parse(reply).rr] == ["fd77::2"]


def test_direction_black_holes_ipv6_only() -> None:
    direction = Direction(LinkSettings(drop_ipv6=True), None, random.Random(1))
    ipv4, ipv6 = bytes([0x45]) + bytes(19), bytes([0x60]) + bytes(39)
    for packet in (ipv4, ipv6, ipv6):
        direction.admit(packet, 0.0)
    assert [packet for _, packet in direction.pop_due(1.0)] == [ipv4]
    assert (direction.stats().blackholed, direction.stats().lost) == (2, 0)


def test_the_link_counts_how_late_it_forwarded_each_packet() -> None:
    client_read, client_write = os.pipe()
    server_read, server_write = os.pipe()
    try:
        link = Link(client_write, server_write, LinkSettings(delay_ms=10), seed=1)
        for k in range(3):
            link.up.admit(bytes([k]), 0.0)  # each due at 10 ms
        link.down.admit(b"d", 0.001)  # due at 11 ms
        start = link.lag(0.0, "fifo")
        link.deliver(0.0104, written=0.0104)  # the up packets: 0.4 ms late
        link.deliver(0.2, written=0.041)  # the down packet: 30 ms late
        assert os.read(server_read, 16) == bytes([0, 1, 2])
        assert os.read(client_read, 16) == b"d"
        lag = link.lag(7.5, "fifo").since(start)
    finally:
        for fd in (client_read, client_write, server_read, server_write):
            os.close(fd)
    assert lag.packets == 4
    assert lag.late_total_ms == pytest.approx(3 * 0.4 + 30)
    # Three within the first threshold; one past 0.5, 1, 2, 5, 10 and 20 ms, not 50.
    assert lag.late_over == tuple(1 if t < 30 else 0 for t in LATE_BUCKETS_MS)
    assert lag.max_late_ms == pytest.approx(30.0)  # the latest seen, below the 50 ms bucket
    assert lag.waited_ms == 7.5 and lag.held_ms == pytest.approx(37.5)
    quiet = link.lag(7.5, "fifo").since(link.lag(7.5, "fifo"))
    assert (quiet.packets, quiet.max_late_ms, quiet.held_ms) == (0, 0.0, 0.0)


def test_link_lag_bounds_the_latest_packet_by_its_bucket() -> None:
    over = tuple(1 if t < 5 else 0 for t in LATE_BUCKETS_MS)  # one packet 2-5 ms late
    before = LinkLag(10, 1.0, (0,) * len(LATE_BUCKETS_MS), 40.0, 0.0)
    after = LinkLag(20, 5.0, over, 40.0, 3.0)
    # The all-time latest was 40 ms, but none in this interval passed 5 ms.
    assert after.since(before).max_late_ms == 5.0
    assert LinkLag.from_dict(dataclasses.asdict(after)) == after
