"""Remedies for ``network_setup``: a dead address family gets the family that works for
this host (or its route or resolver fixed), its gain the time it cost each new
connection; a slow address among the host's records gets it named; a slow lookup gets
a DNS cache; new connections get keep-alive with a sized pool, its gain measured: the
setup a new connection paid when the server closes them, else cold minus warm first
byte; and where the server resumed a TLS session the client offered, resuming
sessions, its gain the full handshake less the resumed one, measured side by side.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice import keys
from latdoc.advice._sizing import advised_pool
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.advice.verify import VERIFY_KEEPALIVE, verify_command
from latdoc.i18n import N_, Message
from latdoc.model import Diagnosis, Effects, Finding, Kind, Remedy, RunContext

__all__ = ["BUILDER", "keep_alive_gain", "network_setup_remedies", "tls_resumption_gain"]


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
    family = f.evidence.get("dead_family")
    cost = f.evidence.get("dead_family_cost_ms")
    if family is not None and cost is not None:
        yield _address_family(int(family), cost, ctx)
    slow = f.evidence.get("slow_address_connect_ms")
    fast = f.evidence.get("fast_address_connect_ms")
    if slow is not None and fast is not None:
        yield _slow_address(f, slow, fast)
    if "dns" in f.title.lower():
        yield _dns_cache(f, ctx)
    yield _keep_alive(f, d, ctx)
    resumption = tls_resumption_gain(d)
    if resumption is not None:
        yield _tls_resumption(f, *resumption)


def tls_resumption_gain(d: Diagnosis) -> tuple[float, float] | None:
    """The full and the resumed TLS handshake, measured side by side, when resuming saved
    time; None when no session was resumed."""
    full, resumed = d.network.get("tls_ms"), d.network.get("tls_resumed_ms")
    if full is None or resumed is None or full <= resumed:
        return None
    return full, resumed


def _address_family(family: int, cost: float, ctx: RunContext) -> Remedy:
    dead, works = ("IPv6", "IPv4") if family == 6 else ("IPv4", "IPv6")
    prefer = (
        Message(
            "  echo 'precedence ::ffff:0:0/96 100' >> /etc/gai.conf   # IPv4 first, every host\n"
        )
        if family == 6
        else ""
    )
    return Remedy(
        keys.ADDRESS_FAMILY,
        Message("Connect over {works}: {dead} does not reach this host", works=works, dead=dead),
        Kind.NETWORK_SETUP,
        Message(
            "Every {dead} attempt failed or timed out, costing each new connection "
            "{cost:.0f} ms before {works} was tried. Fix the {dead} route (or the firewall "
            "that drops it), or prefer {works} for this host:\n"
            "{prefer}  or bind the client to {works} (httpx.AsyncHTTPTransport(local_address="
            "{address})),\n"
            "or use a resolver that does not return the {dead} addresses that do not work.",
            dead=dead,
            cost=cost,
            works=works,
            prefer=prefer,
            address="'0.0.0.0'" if family == 6 else "'::'",
        ),
        cost,
        gain_source="measured",
        how_to_measure=Message(
            "`latdoc probe {endpoint} --model {model}`: a new connection's attempts "
            "(connect_attempts) show the {dead} attempts and their cost",
            endpoint=ctx.endpoint,
            model=ctx.model,
            dead=dead,
        ),
    )


def _slow_address(f: Finding, slow: float, fast: float) -> Remedy:
    """The address the finding names connects slower than the host's fastest: its gain
    the difference, measured, each new connection that goes to it."""
    return Remedy(
        keys.ADDRESS_FAMILY,
        N_("Stop sending connections to the slow address"),
        f.kind,
        Message(
            "{address} connects in {slow:.0f} ms against {fast:.0f} ms for the host's "
            "fastest address: ask the provider to drop or fix it, or pin the fast "
            "address in /etc/hosts (and watch for it changing).",
            address=f.title.rsplit(": ", 1)[-1],
            slow=slow,
            fast=fast,
        ),
        slow - fast,
        gain_source="measured",
        how_to_measure=N_(
            "`latdoc probe` repeated: each new connection's attempts (connect_attempts) "
            "show the address it went to and its connect time"
        ),
    )


def _dns_cache(f: Finding, ctx: RunContext) -> Remedy:
    """A slow lookup gets a caching or a faster resolver, with no gain of its own: what
    it saves is measured by timing the DNS phase before and after the change."""
    return Remedy(
        keys.DNS_CACHE,
        N_("Cache DNS answers or use a faster resolver"),
        f.kind,
        N_(
            "Run a local caching resolver (systemd-resolved, dnsmasq or nscd) or point "
            "/etc/resolv.conf at a faster one; keep connections alive so lookups are rare."
        ),
        None,
        how_to_measure=Message(
            "compare the DNS phase of `latdoc probe {endpoint} --model {model}` before "
            "and after the change",
            endpoint=ctx.endpoint,
            model=ctx.model,
        ),
    )


def _keep_alive(f: Finding, d: Diagnosis, ctx: RunContext) -> Remedy:
    """Keep-alive with a pool sized for the machine and the run's concurrency, its gain
    :func:`keep_alive_gain` when that was measured with an interval."""
    size = advised_pool(ctx.cpu_count, ctx.concurrency)
    measured = keep_alive_gain(d)
    return Remedy(
        keys.KEEP_ALIVE,
        N_("Reuse connections (HTTP keep-alive)"),
        f.kind,
        Message(
            "Create one client at start-up and reuse it for every call:\n"
            "  httpx.AsyncClient(limits=httpx.Limits(max_connections={size}, "
            "max_keepalive_connections={size}))\n"
            "  client = openai.AsyncOpenAI()  # once, not per request\n"
            "If the server still closes connections, check the proxy or load balancer's "
            "keep-alive timeout and any 'Connection: close' it adds.",
            size=size,
        ),
        measured[0] if measured else None,
        gain_interval_ms=measured[1] if measured else None,
        gain_source="measured" if measured else None,
        verify_command=verify_command(ctx, VERIFY_KEEPALIVE),
    )


def _tls_resumption(f: Finding, full: float, resumed: float) -> Remedy:
    """Resuming TLS sessions, its gain the full handshake less the resumed one as
    :func:`tls_resumption_gain` measured them."""
    return Remedy(
        keys.TLS_RESUMPTION,
        N_("Resume TLS sessions on new connections"),
        f.kind,
        Message(
            "The server resumes TLS sessions: a resumed handshake took {resumed:.0f} ms "
            "here against {full:.0f} ms for a full one. Python's ssl (and so httpx and "
            "the OpenAI SDK) never offers a session by itself: keep connections alive "
            "first; where new connections are unavoidable, a client that caches sessions "
            "(curl, Go's tls.ClientSessionCache, Node's https.Agent) pays the shorter one.",
            resumed=resumed,
            full=full,
        ),
        full - resumed,
        gain_source="measured",
        how_to_measure=N_(
            "the network step's cold requests: one offers the first connection's "
            "session; compare its tls_ms with the others'"
        ),
    )


BUILDER = RemedyBuilder(
    Kind.NETWORK_SETUP,
    network_setup_remedies,
    {
        keys.ADDRESS_FAMILY: Effects(),
        keys.DNS_CACHE: Effects(),
        keys.KEEP_ALIVE: Effects(),
        keys.TLS_RESUMPTION: Effects(),
    },
)
