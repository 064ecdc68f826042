"""The network rules: the way to the endpoint, before the server sees a request. A new
connection's DNS, TCP and TLS (``network_setup``: a slow lookup, a server that closes
every connection, a slow handshake) and the path itself (``network_path``: the round
trip and the upload of long prompts), each with its threshold.
"""

from __future__ import annotations

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.stats import median_of
from latdoc.model import Finding, Kind

__all__ = [
    "HIGH_RTT_MS",
    "SLOW_DNS_MS",
    "SLOW_TLS_EXTRA_MS",
    "SLOW_UPLOAD_MS",
    "network_path",
    "network_setup",
]

SLOW_DNS_MS = 200.0
HIGH_RTT_MS = 100.0
SLOW_TLS_EXTRA_MS = 200.0
SLOW_UPLOAD_MS = 200.0


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
            confidence=confidence(cold_n, extra / SLOW_TLS_EXTRA_MS - 1),
        )
    return None


_SETUP_KEYS = frozenset({"dns_ms", "connect_ms", "tls_ms", "setup_ms", "rtt_ms"})


def network_path(f: Facts) -> Finding | None:
    n = f.network
    rtt = n["rtt_ms"]
    upload = median_of(t.send_ms for t in f.measured if t.ok and (t.request_bytes or 0) > 20_000)
    cold_n = int(n["cold_n"] or 0)
    evidence = {k: v for k, v in n.items() if v is not None and k in {"rtt_ms", "connect_ms"}}
    if upload is not None:
        evidence["long_prompt_send_ms"] = upload
    if rtt is not None and rtt > HIGH_RTT_MS:
        return Finding(
            Kind.NETWORK_PATH,
            "High round-trip time to the endpoint",
            f"TCP connect (one round trip) {rtt:.0f} ms > {HIGH_RTT_MS:.0f} ms: far region "
            "or a slow path",
            evidence,
            share_ms=rtt + (upload or 0.0),
            confidence=confidence(cold_n, rtt / HIGH_RTT_MS - 1),
        )
    if upload is not None and upload > SLOW_UPLOAD_MS:
        return Finding(
            Kind.NETWORK_PATH,
            "Slow upload of long prompts",
            f"sending a long prompt took {upload:.0f} ms > {SLOW_UPLOAD_MS:.0f} ms "
            "(until the server acknowledged it): the uplink's bandwidth",
            evidence,
            share_ms=upload + (rtt or 0.0),
            confidence=confidence(3, upload / SLOW_UPLOAD_MS - 1),
        )
    return None
