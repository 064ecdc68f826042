"""The remedies for the network: a slow lookup gets a DNS cache, new connections get
keep-alive with a sized pool (its gain measured: the setup a new connection paid, or
cold minus warm first byte), a long round trip a nearer region, and a slow upload the
client host's TCP settings and a shorter prompt.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice._sizing import SELF_PACED, pool_size, trim_window
from latdoc.advice.verify import verify_command
from latdoc.model import Diagnosis, Finding, Kind, Remedy, RunContext

__all__ = ["network_path_remedies", "network_setup_remedies"]


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
            "dns_cache",
            "Cache DNS answers or use a faster resolver",
            Kind.NETWORK_SETUP,
            "Run a local caching resolver (systemd-resolved, dnsmasq or nscd) or point "
            "/etc/resolv.conf at a faster one; keep connections alive so lookups are rare.",
            None,
            how_to_measure=f"compare the DNS phase of `latdoc probe {ctx.endpoint} --model "
            f"{ctx.model}` before and after the change",
        )
    size = pool_size(ctx.cpu_count, ctx.concurrency)
    measured = keep_alive_gain(d)
    yield Remedy(
        "keep_alive",
        "Reuse connections (HTTP keep-alive)",
        Kind.NETWORK_SETUP,
        "Create one client at start-up and reuse it for every call:\n"
        f"  httpx.AsyncClient(limits=httpx.Limits(max_connections={size}, "
        f"max_keepalive_connections={size}))\n"
        "  client = openai.AsyncOpenAI()  # once, not per request\n"
        "If the server still closes connections, check the proxy or load balancer's "
        "keep-alive timeout and any 'Connection: close' it adds.",
        measured[0] if measured else None,
        gain_interval_ms=measured[1] if measured else None,
        gain_source="measured" if measured else None,
        verify_command=verify_command(ctx, "keepalive"),
    )


def network_path_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    rtt = f.evidence.get("rtt_ms")
    if rtt is not None and rtt > 60:
        yield Remedy(
            "nearer_region",
            "Use the nearest region or endpoint",
            Kind.NETWORK_PATH,
            f"The round trip is {rtt:.0f} ms here. Set base_url to the endpoint nearest the "
            "client (openai.AsyncOpenAI(base_url=...)) or run the client next to the service.",
            None,
            verify_command=verify_command(ctx, "endpoint", alt="URL2"),
        )
    slow_start = ctx.tcp_settings.get("net.ipv4.tcp_slow_start_after_idle")
    self_paced = ctx.host is not None and ctx.host.congestion_control in SELF_PACED
    if slow_start != 0 and not self_paced:
        yield Remedy(
            "tcp_settings",
            "No TCP slow start after idle on the client host",
            Kind.NETWORK_PATH,
            "A long prompt sent after a pause then goes out at the full rate:\n"
            "  sysctl -w net.ipv4.tcp_slow_start_after_idle=0",
            None,
            how_to_measure="run `latdoc diagnose` again after the change and compare the "
            "send time of the long prompts",
        )
    if f.evidence.get("long_prompt_send_ms") and d.length is not None:
        longest = d.length.points[-1].prompt_tokens
        yield Remedy(
            "trim_window",
            "Send less: trim the prompt to what the answer needs",
            Kind.NETWORK_PATH,
            "The uplink is slow for long prompts: keep the last turns only, or compress "
            "the history (see the input-length remedies).",
            None,
            verify_command=verify_command(
                ctx, "trim", **{"from": longest, "to": trim_window(longest)}
            ),
        )
