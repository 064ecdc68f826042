"""The client host read live, the proxy routes of the API URLs, and the checklist of both.

A failing check is information, not an error: :func:`check_system` returns every item,
passing or not.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from latdoc.advice.system import ProxyRouteFact, checklist, proxy_items
from latdoc.errors import UsageError
from latdoc.model import DEFAULT_CONCURRENCY, HostFacts, SystemItem
from latdoc.pipeline import (
    PROC_SYS,
    congestion_control,
    cpu_count,
    h2_version,
    has_tls13,
    open_files,
    openssl_version,
    port_range,
    tcp_settings,
)
from latdoc.probe import ProxyConfig, providers


def read_host(root: Path = PROC_SYS) -> HostFacts:
    """The checklist's facts about this host; sysctls are read under ``root``."""
    tcp = tcp_settings(root)
    files = open_files()
    h2 = h2_version()
    return HostFacts(
        slow_start_after_idle=tcp.get("net.ipv4.tcp_slow_start_after_idle"),
        congestion_control=congestion_control(root),
        keepalive_time_s=tcp.get("net.ipv4.tcp_keepalive_time"),
        keepalive_intvl_s=tcp.get("net.ipv4.tcp_keepalive_intvl"),
        keepalive_probes=tcp.get("net.ipv4.tcp_keepalive_probes"),
        port_range=port_range(root),
        open_files_soft=files[0] if files else None,
        open_files_hard=files[1] if files else None,
        cpu_count=cpu_count(),
        h2_version=h2,
        http2_available=h2 is not None,
        python_version=platform.python_version(),
        openssl_version=openssl_version(),
        tls13=has_tls13(),
    )


def check_system(
    urls: Sequence[str] = (),
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    base_url: str | None = None,
) -> tuple[SystemItem, ...]:
    """This host's checklist for ``concurrency`` concurrent streams, then the proxy route
    of each of ``urls`` (none given: ``base_url``, the URL the commands would use, and
    every provider preset's; see :func:`default_urls`)."""
    routes = proxy_routes(list(urls) or default_urls(base_url))
    return checklist(read_host(), concurrency) + proxy_items(routes)


def default_urls(base_url: str | None = None) -> list[str]:
    """``base_url`` and every preset's base URL that names its host."""
    urls = [base_url or ""]
    urls += [p.base_url for p in providers.PROVIDERS]
    return [
        u
        for u in dict.fromkeys(urls)
        if u.startswith(("http://", "https://"))
        and urlsplit(u).netloc
        and urlsplit(u).netloc == urlsplit(u).netloc.lower()  # no LOCATION, no $VAR
        and "$" not in u
    ]


def proxy_routes(urls: list[str]) -> list[ProxyRouteFact]:
    """Each URL's route through the environment's proxy variables, hosts of one route
    together, in the order first met."""
    config = ProxyConfig()
    grouped: dict[tuple[str, bool, str | None], list[str]] = {}
    for url in urls:
        host = urlsplit(url).hostname or url
        key: tuple[str, bool, str | None]
        try:
            route = config.route(url)
        except UsageError as exc:
            key = ("", False, str(exc))
        else:
            key = (route.shown, route.proxy is not None, None)
        grouped.setdefault(key, [])
        if host not in grouped[key]:
            grouped[key].append(host)
    return [
        ProxyRouteFact(tuple(hosts), shown or (problem or ""), proxied, problem)
        for (shown, proxied, problem), hosts in grouped.items()
    ]
