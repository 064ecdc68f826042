"""``network_setup``: a new connection's DNS, TCP and TLS, before the server sees a request.

The rule fires on a slow lookup, a server that closes every connection (so every
request pays the setup), or a handshake slower than its round trips, each with its
threshold. Its share is the DNS lookup, the whole setup a new connection pays, or the
TLS handshake's time beyond its two round trips.
"""

from __future__ import annotations

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.model import Finding, Kind

__all__ = ["SLOW_DNS_MS", "SLOW_TLS_EXTRA_MS", "SPEC", "network_setup"]

SLOW_DNS_MS = 200.0
SLOW_TLS_EXTRA_MS = 200.0


def network_setup(f: Facts) -> Finding | None:
    n = f.network
    dns, tls, rtt, setup = n["dns_ms"], n["tls_ms"], n["rtt_ms"], n["setup_ms"]
    closes = n["server_closes_connections"]
    cold_n = int(n["cold_n"] or 0)
    if setup is None:
        return None
    evidence = {k: v for k, v in n.items() if v is not None and k in _SETUP_KEYS}
    if dns is not None and dns > SLOW_DNS_MS:
        return Finding(
            Kind.NETWORK_SETUP,
            "Slow DNS lookup",
            f"DNS lookup {dns:.0f} ms > {SLOW_DNS_MS:.0f} ms (seed: fix the network)",
            evidence,
            share_ms=dns,
            n=cold_n,
            confidence=confidence(cold_n, dns / SLOW_DNS_MS - 1),
        )
    if closes is not None and closes >= 0.5:
        return Finding(
            Kind.NETWORK_SETUP,
            "Every request opens a new connection",
            f"{closes:.0%} of requests sent for reuse needed a new connection: the server "
            "(or a proxy) closes connections, so each pays DNS + TCP + TLS",
            {**evidence, "reused_fraction": 1 - closes},
            share_ms=setup,
            n=int(n["warm_n"] or 0),
            confidence=confidence(int(n["warm_n"] or 0), closes),
        )
    if tls is not None and rtt is not None and tls - 2 * rtt > SLOW_TLS_EXTRA_MS:
        extra = tls - 2 * rtt
        return Finding(
            Kind.NETWORK_SETUP,
            "Slow TLS handshake",
            f"TLS {tls:.0f} ms is {extra:.0f} ms more than its two round trips "
            f"(> {SLOW_TLS_EXTRA_MS:.0f} ms): long certificate chain or a slow server",
            evidence,
            share_ms=extra,
            n=cold_n,
            confidence=confidence(cold_n, extra / SLOW_TLS_EXTRA_MS - 1),
        )
    return None


_SETUP_KEYS = frozenset({"dns_ms", "connect_ms", "tls_ms", "setup_ms", "rtt_ms"})


SPEC = KindSpec(
    Kind.NETWORK_SETUP,
    "Network setup",
    "DNS, TCP and TLS handshakes, connections not reused",
    colour="#8b6ee0",
    rule=network_setup,
    before_first_token=True,
    network=True,
)
