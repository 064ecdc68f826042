"""Remedies for ``network_setup``: a slow lookup gets a DNS cache, new connections get
keep-alive with a sized pool, its gain measured: the setup a new connection paid when
the server closes them, else cold minus warm first byte.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice import keys
from latdoc.advice._sizing import advised_pool
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.advice.verify import VERIFY_KEEPALIVE, verify_command
from latdoc.model import Diagnosis, Finding, Kind, Remedy, RunContext

__all__ = ["BUILDER", "keep_alive_gain", "network_setup_remedies"]


def keep_alive_gain(d: Diagnosis) -> tuple[float, tuple[float, float]] | None:
    """What reusing connections saves here, measured: the setup every new connection paid
    when the server closes them, else cold minus warm first byte; None without an interval."""
    n = d.network
    closes = n.get("server_closes_connections")
    if closes is not None and closes >= 0.5:
        gain, low, high = (
            n.get(k)
            for k in ("new_connection_setup_ms", "new_connection_setup_low_ms",
                      "new_connection_setup_high_ms")
        )  # fmt: skip
    else:
        gain, low, high = (
            n.get(k)
            for k in ("keepalive_saving_ms", "keepalive_saving_low_ms", "keepalive_saving_high_ms")
        )
    if gain is None or low is None or high is None or gain <= 0:
        return None
    return gain, (low, high)


def network_setup_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    if "dns" in f.title.lower():
        yield Remedy(
            keys.DNS_CACHE,
            "Cache DNS answers or use a faster resolver",
            f.kind,
            "Run a local caching resolver (systemd-resolved, dnsmasq or nscd) or point "
            "/etc/resolv.conf at a faster one; keep connections alive so lookups are rare.",
            None,
            how_to_measure=f"compare the DNS phase of `latdoc probe {ctx.endpoint} --model "
            f"{ctx.model}` before and after the change",
        )
    size = advised_pool(ctx.cpu_count, ctx.concurrency)
    measured = keep_alive_gain(d)
    yield Remedy(
        keys.KEEP_ALIVE,
        "Reuse connections (HTTP keep-alive)",
        f.kind,
        "Create one client at start-up and reuse it for every call:\n"
        f"  httpx.AsyncClient(limits=httpx.Limits(max_connections={size}, "
        f"max_keepalive_connections={size}))\n"
        "  client = openai.AsyncOpenAI()  # once, not per request\n"
        "If the server still closes connections, check the proxy or load balancer's "
        "keep-alive timeout and any 'Connection: close' it adds.",
        measured[0] if measured else None,
        gain_interval_ms=measured[1] if measured else None,
        gain_source="measured" if measured else None,
        verify_command=verify_command(ctx, VERIFY_KEEPALIVE),
    )


BUILDER = RemedyBuilder(Kind.NETWORK_SETUP, network_setup_remedies)
