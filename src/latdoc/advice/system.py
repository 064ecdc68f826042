"""The client host as a checklist: facts in, items out, nothing read here.

Each item says what the setting is now, what it should be, why it matters to streaming
LLM calls, and the command that changes it; capacity items also say what the current
limit allows for the concurrent streams the user expects. :func:`for_verdict` keeps the
failing items that matter for a diagnosis's verdict and contributing kinds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from latdoc.advice._sizing import SELF_PACED, advised_pool
from latdoc.i18n import N_, Message
from latdoc.model import Diagnosis, HostFacts, Kind, RunContext, SystemItem

KEEPALIVE_TIME_S = 60
"""Probe an idle connection after a minute: below the idle timeouts of NAT gateways and
load balancers (typically 4–6 minutes), so pooled connections outlive quiet spells."""
KEEPALIVE_INTVL_S = 10
KEEPALIVE_PROBES = 6
FILES_HEADROOM = 256
"""Descriptors a client process holds besides its sockets: stdio, logs, libraries, the
event loop's own, a database."""
TIME_WAIT_S = 60
"""How long Linux keeps a closed connection's port (TIME_WAIT, fixed at 60 s)."""
OPEN_FILES_TARGET = 65536
WIDE_PORT_RANGE = (10240, 65535)
"""Leaves the ports below 10240 to the services that listen on them."""
MIN_PYTHON = (3, 11)


def checklist(facts: HostFacts, concurrency: int) -> tuple[SystemItem, ...]:
    """Every item of the host checklist for ``concurrency`` concurrent streams."""
    pool = advised_pool(facts.cpu_count or 1, concurrency)
    return (
        _slow_start(facts),
        *_keepalive(facts),
        _ports(facts, concurrency, pool),
        _open_files(facts, pool),
        _pool(facts, concurrency, pool),
        _http2(facts),
        _python(facts),
        _openssl(facts),
    )


@dataclass(frozen=True, slots=True)
class ProxyRouteFact:
    """How requests to some hosts go, as the environment's proxy variables say (read by
    the caller): through ``route`` (a proxy's URL, credentials masked, and the variable
    that named it) or direct; ``problem`` when a variable cannot be used."""

    hosts: tuple[str, ...]
    route: str
    proxied: bool
    problem: str | None = None


def proxy_items(facts: Sequence[ProxyRouteFact]) -> tuple[SystemItem, ...]:
    """One item per route: which proxy requests to those hosts would go through (as
    httpx, the openai SDK and curl choose it), and how to bypass it."""
    items = []
    for fact in facts:
        first, *more = fact.hosts
        hosts = first if not more else Message("{first} and {n} more", first=first, n=len(more))
        listed = Message("For {hosts}: ", hosts=", ".join(fact.hosts)) if more else ""
        name = Message("proxy for {hosts}", hosts=hosts)
        if fact.problem is not None:
            why = Message(
                "{listed}{problem}. httpx, the openai SDK, curl and latdoc read these "
                "variables: fix or unset it.",
                listed=listed,
                problem=fact.problem,
            )
            items.append(
                SystemItem(
                    key="proxy", name=name, current=fact.problem,
                    recommended=N_("a proxy URL the clients can use"), ok=False, why=why,
                    command="unset HTTPS_PROXY HTTP_PROXY ALL_PROXY NO_PROXY",
                    kinds=(Kind.NETWORK_PATH, Kind.ERRORS),
                )
            )  # fmt: skip
            continue
        if fact.proxied:
            why = Message.joined(
                "",
                [
                    listed,
                    N_(
                        "Requests go through this proxy, as httpx, the openai SDK and curl "
                        "choose it from the environment: each new connection pays its CONNECT "
                        "round trip before TLS (latdoc probe and diagnose time it as "
                        "proxy_connect). Where policy allows, listing the API's host in "
                        "NO_PROXY connects direct."
                    ),
                ],
            )
            command = f"export NO_PROXY={','.join(fact.hosts)}"
        else:
            why = Message.joined(
                "",
                [
                    listed,
                    N_(
                        "Requests connect direct: no proxy variable (HTTPS_PROXY, HTTP_PROXY, "
                        "ALL_PROXY) applies to these hosts, or NO_PROXY lists them."
                    ),
                ],
            )
            command = N_("export HTTPS_PROXY=http://PROXY:PORT  # only where the network needs one")
        items.append(
            SystemItem(
                key="proxy", name=name, current=fact.route,
                recommended=N_("direct, or a proxy near the client"), ok=None, why=why,
                command=command, kinds=(Kind.NETWORK_PATH, Kind.NETWORK_SETUP),
            )
        )  # fmt: skip
    return tuple(items)


def for_verdict(items: Iterable[SystemItem], kinds: Iterable[Kind]) -> tuple[SystemItem, ...]:
    """The items that fail and matter for one of ``kinds``, in checklist order."""
    wanted = set(kinds)
    return tuple(i for i in items if i.ok is False and wanted.intersection(i.kinds))


def with_system(diagnosis: Diagnosis, context: RunContext) -> Diagnosis:
    """The diagnosis with the failing host items that matter for its verdict."""
    if context.host is None:
        return diagnosis
    v = diagnosis.verdict
    items = for_verdict(checklist(context.host, context.concurrency), (v.primary, *v.contributing))
    return replace(diagnosis, system=items)


def _sysctl_command(name: str, value: object) -> str:
    return f"sysctl -w {name}={value}"


def _slow_start(f: HostFacts) -> SystemItem:
    name = "net.ipv4.tcp_slow_start_after_idle"
    value = f.slow_start_after_idle
    self_paced = f.congestion_control in SELF_PACED
    current = None if value is None else str(value)
    if value == 1 and self_paced:
        current = Message("1 ({control}: not applied)", control=f.congestion_control)
    return SystemItem(
        key="slow_start_after_idle",
        name=name,
        current=current,
        recommended="0",
        ok=None if value is None else (value == 0 or self_paced),
        why=N_(
            "After a pause longer than the retransmission timeout (~0.2–1 s), Linux "
            "shrinks a kept-alive connection's congestion window back to 10 packets, so "
            "the next long prompt pays extra round trips to ramp up again. Congestion "
            "controls that pace themselves (bbr) skip this restart."
        ),
        command=_sysctl_command(name, 0),
        kinds=(Kind.NETWORK_PATH,),
    )


def _keepalive(f: HostFacts) -> tuple[SystemItem, ...]:
    time_s, intvl_s, probes = f.keepalive_time_s, f.keepalive_intvl_s, f.keepalive_probes
    detect = None
    if time_s is not None and intvl_s is not None and probes is not None:
        total = time_s + intvl_s * probes
        detect = Message(
            "a dead connection is noticed after {time} + {probes} × {intvl} = {total} s "
            "({duration})",
            time=time_s,
            probes=probes,
            intvl=intvl_s,
            total=total,
            duration=_duration(total),
        )
    kinds = (Kind.NETWORK_SETUP, Kind.STALLS)
    socket_note = N_(
        " Applies to sockets that turn keep-alive on: httpx.AsyncHTTPTransport("
        "socket_options=[(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)])."
    )
    return (
        _at_most(
            "keepalive_time",
            "net.ipv4.tcp_keepalive_time",
            time_s,
            KEEPALIVE_TIME_S,
            "s",
            Message.joined(
                "",
                [
                    N_(
                        "Silence before the kernel probes an idle connection. NAT gateways and "
                        "load balancers forget idle flows after a few minutes; probing sooner "
                        "keeps pooled connections alive and finds dead ones in minutes, not "
                        "hours."
                    ),
                    socket_note,
                ],
            ),
            kinds,
            detect,
        ),
        _at_most(
            "keepalive_intvl",
            "net.ipv4.tcp_keepalive_intvl",
            intvl_s,
            KEEPALIVE_INTVL_S,
            "s",
            N_("Seconds between keep-alive probes once the first went unanswered."),
            kinds,
        ),
        _at_most(
            "keepalive_probes",
            "net.ipv4.tcp_keepalive_probes",
            probes,
            KEEPALIVE_PROBES,
            "",
            N_(
                "Unanswered probes before the connection is declared dead and the request "
                "waiting on it fails, instead of hanging."
            ),
            kinds,
        ),
    )


def _at_most(
    key: str,
    name: str,
    value: int | None,
    limit: int,
    unit: str,
    why: str,
    kinds: tuple[Kind, ...],
    allows: str | None = None,
) -> SystemItem:
    suffix = f" {unit}" if unit else ""
    return SystemItem(
        key=key,
        name=name,
        current=None if value is None else f"{value}{suffix}",
        recommended=f"≤ {limit}{suffix}",
        ok=None if value is None else value <= limit,
        why=why,
        command=_sysctl_command(name, limit),
        kinds=kinds,
        allows=allows,
    )


def _duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _ports(f: HostFacts, concurrency: int, pool: int) -> SystemItem:
    """Each connection to one endpoint address holds its own local port, and a closed one
    keeps it for TIME_WAIT: the range must hold the pool, plus what TIME_WAIT holds when
    each stream opens a new connection a second (requests of a second without reuse)."""
    needed = pool + concurrency * TIME_WAIT_S
    ports = f.port_range
    size = None if ports is None else ports[1] - ports[0] + 1
    allows = None
    if size is not None:
        allows = (
            f"{size} connections open at once to one endpoint address; without keep-alive, "
            f"~{size // TIME_WAIT_S} new connections a second before TIME_WAIT holds "
            "every port"
        )
    low, high = WIDE_PORT_RANGE
    return SystemItem(
        key="ephemeral_ports",
        name="net.ipv4.ip_local_port_range",
        current=None if ports is None or size is None else f"{ports[0]}–{ports[1]} ({size})",
        recommended=Message("≥ {n} ports", n=needed),
        ok=None if size is None else size >= needed,
        why=Message(
            "{concurrency} streams need the pool's {pool} ports, plus {wait} s of TIME_WAIT "
            "ports if each opens a new connection a second. Reusing connections (keep-alive) "
            "is the real fix; a wider range buys headroom.",
            concurrency=concurrency,
            pool=pool,
            wait=TIME_WAIT_S,
        ),
        command=f'sysctl -w net.ipv4.ip_local_port_range="{low} {high}"',
        kinds=(Kind.CLIENT, Kind.NETWORK_SETUP),
        allows=allows,
    )


def _open_files(f: HostFacts, pool: int) -> SystemItem:
    needed = pool + FILES_HEADROOM
    soft, hard = f.open_files_soft, f.open_files_hard
    unlimited = soft == -1
    current = None
    if soft is not None:
        current = "unlimited" if unlimited else str(soft)
    allows = None
    if soft is not None:
        room = "any number of" if unlimited else f"~{max(0, soft - FILES_HEADROOM)}"
        allows = f"{room} sockets at once, after {FILES_HEADROOM} files for everything else"
    target = OPEN_FILES_TARGET
    if hard is not None and hard != -1 and hard < target:
        target = max(hard, needed)
    command = f"ulimit -n {target}"
    if hard is not None and hard != -1 and hard < needed:
        command += f"  # hard limit {hard}: raise LimitNOFILE= or /etc/security/limits.conf"
    return SystemItem(
        key="open_files",
        name=N_("open files (ulimit -n)"),
        current=current,
        recommended=f"≥ {needed}",
        ok=None if soft is None else (unlimited or soft >= needed),
        why=Message(
            "Every stream holds a socket, and a socket is a file: the pool's {pool} "
            "connections plus {headroom} for the rest. Past the limit, new connections fail "
            "with 'Too many open files' (EMFILE).",
            pool=pool,
            headroom=FILES_HEADROOM,
        ),
        command=command,
        kinds=(Kind.CLIENT, Kind.ERRORS),
        allows=allows,
    )


def _pool(f: HostFacts, concurrency: int, pool: int) -> SystemItem:
    cores = f.cpu_count
    return SystemItem(
        key="pool_size",
        name=N_("cores → pool size"),
        current=None if cores is None else Message("{n} cores", n=cores),
        recommended=Message("pool of {n}", n=pool),
        ok=None,
        why=Message(
            "2 × cores + expected concurrency = 2 × {cores} + {concurrency} = {pool}: too "
            "small queues requests in the client, too large wastes sockets and memory.",
            cores=cores or 1,
            concurrency=concurrency,
            pool=pool,
        ),
        command=f"httpx.Limits(max_connections={pool}, max_keepalive_connections={pool})",
        kinds=(Kind.CLIENT,),
    )


def _http2(f: HostFacts) -> SystemItem:
    current = None
    if f.http2_available is not None:
        current = f"h2 {f.h2_version}" if f.http2_available else "h2 not installed"
    return SystemItem(
        key="http2",
        name="HTTP/2 (h2)",
        current=current,
        recommended=N_("h2 installed"),
        ok=f.http2_available,
        why=N_(
            "With h2 and httpx.AsyncClient(http2=True), many streams share one connection: "
            "requests wait neither for a free connection nor for a new handshake."
        ),
        command="pip install 'httpx[http2]'",
        kinds=(Kind.CLIENT, Kind.NETWORK_SETUP),
    )


def _python(f: HostFacts) -> SystemItem:
    version = f.python_version
    ok = None
    if version is not None:
        try:
            ok = tuple(int(p) for p in version.split(".")[:2]) >= MIN_PYTHON
        except ValueError:
            ok = None
    return SystemItem(
        key="python",
        name="Python",
        current=version,
        recommended=Message("{major}.{minor} or newer", major=MIN_PYTHON[0], minor=MIN_PYTHON[1]),
        ok=ok,
        why=N_(
            "CPython 3.11 runs asyncio code markedly faster and adds asyncio.TaskGroup and "
            "asyncio.timeout: less event-loop lag under many streams."
        ),
        command="uv python install 3.12",
        kinds=(Kind.CLIENT,),
    )


def _openssl(f: HostFacts) -> SystemItem:
    current = f.openssl_version
    if current is not None and f.tls13 is False:
        current += " (no TLS 1.3)"
    return SystemItem(
        key="openssl",
        name="OpenSSL",
        current=current,
        recommended="TLS 1.3 (≥ 1.1.1)",
        ok=f.tls13,
        why=N_(
            "TLS 1.3 completes its handshake in one round trip instead of TLS 1.2's two, "
            "on every new connection."
        ),
        command=N_("use a Python built against OpenSSL 1.1.1 or newer"),
        kinds=(Kind.NETWORK_SETUP,),
    )
