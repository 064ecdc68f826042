"""``network_setup``: a new connection's DNS, TCP and TLS, before the server sees a request.

The rule fires on an address family that never connects, a lookup past the reference
profile's slow edge of healthy (``dns_ms``: 200 ms, the seed's), a server that closes
every connection (so every request pays the setup), a handshake that spends more beyond
its two round trips than a healthy one does (the profile's handshake edge, 100 ms, less
two typical round trips of 20 ms: 60 ms), or one of the host's addresses slower to
connect than the others, each with its threshold. Its share is the time the dead family
costs each new connection (from the first attempt to the start of the one that
connected), the DNS lookup, the whole setup a new connection pays, the TLS handshake's
time beyond its two round trips, or what the slow address adds to the connections that
went to it; a slow lookup's or handshake's excess is the part of it past the edge. A
setup found on a server that keeps connections alive is weighed on a request that opens
one (the spec's ``on_new_connection``).

A dead family is read from the connection attempts the probe raced (happy eyeballs,
RFC 8305): every attempt on it failed, timed out or was still waiting when the other
family connected, on at least :data:`~latdoc.analysis.policy.MIN_N` new connections.
"""

from __future__ import annotations

from collections.abc import Sequence

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.policy import MIN_N
from latdoc.analysis.stats import median_of
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind
from latdoc.records import RequestTrace
from latdoc.reference import healthy_reference

__all__ = [
    "DEAD_FAMILY_MS",
    "SLOW_ADDRESS_MS",
    "SLOW_DNS_MS",
    "SLOW_TLS_EXTRA_MS",
    "SPEC",
    "dead_family",
    "network_setup",
    "slow_address",
]

SLOW_DNS_MS = healthy_reference().edge("dns_ms")
"""The shipped profile's slow edge of a lookup: what the plan reads to ask more cold
requests near it (a run held against a user's reference reads that one's)."""
SLOW_TLS_EXTRA_MS = healthy_reference().tls_work_edge_ms
"""The shipped profile's most a healthy handshake spends beyond its two round trips
(100 ms less two round trips of 20 ms): what the plan reads to ask more cold requests
near it (a run held against a user's reference reads that one's)."""
DEAD_FAMILY_MS = 20.0
"""A dead address family is named when it costs a new connection more than this (median):
a family refused at once costs a round trip or less, and is no one's bottleneck."""
SLOW_ADDRESS_MS = 30.0
"""One of a host's addresses is named when its connects take this much longer (median)
than the fastest address's, and at least half again as long."""
SLOW_ADDRESS_RATIO = 1.5
_FAMILY_NAMES = {4: "IPv4", 6: "IPv6"}


def dead_family(traces: Sequence[RequestTrace]) -> tuple[int, int, float] | None:
    """The address family that never connected while the other did, how many new
    connections tried it, and the median time it cost each (from its first attempt to
    the start of the attempt that connected); ``None`` when no family is dead."""
    raced = [t for t in traces if t.connect_attempts]
    for family in (6, 4):
        tried = [t for t in raced if any(a.family == family for a in t.connect_attempts)]
        if len(tried) < MIN_N:
            continue
        costs = []
        for t in tried:
            won = [a for a in t.connect_attempts if a.outcome == "connected"]
            if not won or won[0].family == family:
                break
            costs.append((won[0].start_ns - t.connect_attempts[0].start_ns) / 1e6)
        else:
            cost = median_of(costs)
            if cost is not None:
                return family, len(tried), cost
    return None


def slow_address(traces: Sequence[RequestTrace]) -> tuple[str, str, float, float, int] | None:
    """Of one family's addresses, the slowest to connect against the fastest (each with at
    least ``MIN_N`` connects), when it is :data:`SLOW_ADDRESS_MS` and
    :data:`SLOW_ADDRESS_RATIO` slower: (slow, fast, their median connect ms, connects)."""
    times: dict[str, list[float]] = {}
    for t in traces:
        for a in t.connect_attempts:
            if a.outcome == "connected":
                times.setdefault(a.address, []).append(a.ms)
    medians = {
        address: (m, len(v), ":" in address)
        for address, v in times.items()
        if len(v) >= MIN_N and (m := median_of(v)) is not None
    }
    for six in (False, True):
        family = {a: m for a, m in medians.items() if m[2] == six}
        if len(family) < 2:
            continue
        slow = max(family, key=lambda a: family[a][0])
        fast = min(family, key=lambda a: family[a][0])
        slow_ms, fast_ms = family[slow][0], family[fast][0]
        if slow_ms - fast_ms > SLOW_ADDRESS_MS and slow_ms > SLOW_ADDRESS_RATIO * fast_ms:
            return slow, fast, slow_ms, fast_ms, family[slow][1]
    return None


def network_setup(f: Facts) -> Finding | None:
    n = f.network
    dns, tls, rtt, setup = n["dns_ms"], n["tls_ms"], n["rtt_ms"], n["setup_ms"]
    closes = n["server_closes_connections"]
    cold_n = int(n["cold_n"] or 0)
    if setup is None:
        return None
    evidence = {k: v for k, v in n.items() if v is not None and k in _SETUP_KEYS}
    dead = dead_family(f.measured)
    if dead is not None and dead[2] > DEAD_FAMILY_MS:
        return _dead_family_finding(*dead, evidence)
    lookup = f.reference["dns_ms"]
    if dns is not None and lookup.is_slow(dns):
        return Finding(
            Kind.NETWORK_SETUP,
            N_("Slow DNS lookup"),
            Message(
                "DNS lookup {dns:.0f} ms, past the slow edge of healthy, {limit:.0f} ms (good "
                "resolvers answer in ~{typical:.0f} ms: {source}; seed: fix the network)",
                dns=dns,
                limit=lookup.slow_edge,
                typical=lookup.typical,
                source=lookup.cited(),
            ),
            evidence,
            share_ms=dns,
            excess_ms=lookup.beyond_edge(dns),
            n=cold_n,
            confidence=confidence(cold_n, dns / max(lookup.slow_edge, 1e-9) - 1),
        )
    if closes is not None and closes >= 0.5:
        return Finding(
            Kind.NETWORK_SETUP,
            N_("Every request opens a new connection"),
            Message(
                "{share:.0%} of requests sent for reuse needed a new connection: the server "
                "(or a proxy) closes connections, so each pays DNS + TCP + TLS",
                share=closes,
            ),
            {**evidence, "reused_fraction": 1 - closes},
            share_ms=setup,
            n=int(n["warm_n"] or 0),
            confidence=confidence(int(n["warm_n"] or 0), closes),
        )
    work = f.reference.tls_work_edge_ms
    if tls is not None and rtt is not None and tls - 2 * rtt > work:
        extra = tls - 2 * rtt
        handshake = f.reference["tls_handshake_ms"]
        return Finding(
            Kind.NETWORK_SETUP,
            N_("Slow TLS handshake"),
            Message(
                "TLS {tls:.0f} ms is {extra:.0f} ms more than its two round trips, past the "
                "{limit:.0f} ms a healthy handshake spends beyond them (its slow edge, "
                "{edge:.0f} ms, less two typical round trips; handshakes take ~{typical:.0f} "
                "ms: {source}): long certificate chain or a slow server",
                tls=tls,
                extra=extra,
                limit=work,
                edge=handshake.slow_edge,
                typical=handshake.typical,
                source=handshake.cited(),
            ),
            evidence,
            share_ms=extra,
            excess_ms=extra - work,
            n=cold_n,
            confidence=confidence(cold_n, extra / max(work, 1e-9) - 1),
        )
    slow = slow_address(f.measured)
    if slow is not None:
        return _slow_address_finding(*slow, evidence)
    return None


def _dead_family_finding(
    family: int, tried: int, cost: float, evidence: dict[str, float]
) -> Finding:
    """The finding of an address family that never connects (see :func:`dead_family`):
    each new connection waits ``cost`` ms for the other family."""
    name, other = _FAMILY_NAMES[family], _FAMILY_NAMES[10 - family]
    return Finding(
        Kind.NETWORK_SETUP,
        Message(
            "{name} never connects: each new connection waits for {other}",
            name=name, other=other,
        ),
        Message(
            "every {name} attempt of {tried} new connections failed or timed out while "
            "{other} connected: {cost:.0f} ms lost per new connection (> {limit:.0f} ms)",
            name=name, tried=tried, other=other, cost=cost, limit=DEAD_FAMILY_MS,
        ),
        {**evidence, "dead_family": float(family), "dead_family_cost_ms": cost,
         "dead_family_connections": float(tried)},
        share_ms=cost,
        n=tried,
        confidence=confidence(tried, cost / DEAD_FAMILY_MS - 1),
    )  # fmt: skip


def _slow_address_finding(
    address: str, fast: str, slow_ms: float, fast_ms: float, count: int, evidence: dict[str, float]
) -> Finding:
    """The finding of one of the host's addresses slower to connect than the fastest of
    its family (see :func:`slow_address`): what it adds is its share."""
    return Finding(
        Kind.NETWORK_SETUP,
        Message("One of the host's addresses connects slowly: {address}", address=address),
        Message(
            "TCP connect to {address} took {slow:.0f} ms (median of {n}) against "
            "{fast_ms:.0f} ms to {fast} (> {limit:.0f} ms and {ratio:g}× slower): a far "
            "or overloaded address among the records",
            address=address,
            slow=slow_ms,
            n=count,
            fast_ms=fast_ms,
            fast=fast,
            limit=SLOW_ADDRESS_MS,
            ratio=SLOW_ADDRESS_RATIO,
        ),
        {**evidence, "slow_address_connect_ms": slow_ms, "fast_address_connect_ms": fast_ms},
        share_ms=slow_ms - fast_ms,
        n=count,
        confidence=confidence(count, (slow_ms - fast_ms) / SLOW_ADDRESS_MS - 1),
    )


_SETUP_KEYS = frozenset({"dns_ms", "connect_ms", "tls_ms", "setup_ms", "rtt_ms"})


SPEC = KindSpec(
    Kind.NETWORK_SETUP,
    N_("Network setup"),
    N_("DNS, TCP and TLS handshakes, connections not reused"),
    colour="#8b6ee0",
    rule=network_setup,
    before_first_token=True,
    network=True,
    on_new_connection=True,
)
