"""Which proxy a request goes through, as curl and httpx choose it, and the pool that
sends through it.

The environment is read as httpx (and so the openai SDK) and curl read it: for an
``https://`` URL ``https_proxy`` then ``HTTPS_PROXY``, for ``http://`` ``http_proxy``
then ``HTTP_PROXY``, else ``all_proxy`` then ``ALL_PROXY``; the lower-case name wins
where both are set. ``no_proxy`` (else ``NO_PROXY``) lists the hosts reached direct:
``*`` (every host), a name (``example.com`` or ``.example.com``: that name and every
name under it; ``*.example.com``: the names under it), an address (``10.1.2.3``,
``::1`` or ``[::1]``), a network (``10.0.0.0/8``, ``fd00::/8``), each optionally with a
port (``example.com:8443``: that port only). ``--proxy URL`` takes the environment's
place, and ``NO_PROXY`` still applies to it, as with curl's ``-x``; ``--no-proxy``
sends direct.

A proxy URL is ``http://``, ``https://`` (TLS to the proxy), ``socks5://`` or
``socks5h://``, with ``user:password@`` for the proxy's own authentication; a URL
without a scheme is ``http://``, as both tools read it. SOCKS5 names the host to the
proxy, which resolves it (``socks5h``'s meaning; httpx sends ``socks5://`` the same
way). Through an HTTP proxy an ``https://`` URL is tunnelled (``CONNECT``), an
``http://`` one forwarded. The proxy's password is never printed or kept: a proxy is
shown by :attr:`Proxy.shown`, its URL with ``***`` for the credentials.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import httpcore

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message

__all__ = [
    "NoProxyEntry",
    "Proxy",
    "ProxyConfig",
    "ProxyRoute",
    "parse_no_proxy",
    "parse_proxy",
    "proxy_pool",
]

_SCHEMES = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}
SOCKS_SCHEMES = ("socks5", "socks5h")


@dataclass(frozen=True)
class Proxy:
    """A proxy to send through. ``username`` and ``password`` never leave this record
    except to the proxy itself."""

    scheme: str
    host: str
    port: int
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    source: str = "--proxy"
    """Where it was named: ``--proxy``, ``HTTPS_PROXY``, ``all_proxy``, ..."""

    @property
    def socks(self) -> bool:
        return self.scheme in SOCKS_SCHEMES

    @property
    def shown(self) -> str:
        """The proxy as every output names it: its URL, credentials as ``***``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        auth = "***@" if self.username or self.password else ""
        return f"{self.scheme}://{auth}{host}:{self.port}"

    @property
    def origin(self) -> str:
        """The URL httpcore connects to, without credentials."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "http" if self.socks else self.scheme
        return f"{scheme}://{host}:{self.port}"

    @property
    def auth(self) -> tuple[bytes, bytes] | None:
        if self.username is None and self.password is None:
            return None
        return (self.username or "").encode(), (self.password or "").encode()

    @property
    def secrets(self) -> tuple[str, ...]:
        """What must be masked wherever text about this proxy is written."""
        return tuple(s for s in (self.password,) if s)


def parse_proxy(text: str, source: str = "--proxy") -> Proxy:
    """A proxy from its URL; :class:`UsageError` naming ``source`` (never the
    password) for one that cannot be used."""
    raw = text.strip()
    if not raw:
        raise UsageError(
            Message("{source} is empty: give a proxy URL such as http://proxy:3128", source=source)
        )
    if "://" not in raw:
        raw = "http://" + raw
    shown = _mask(raw)
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise UsageError(
            Message(
                "{source} {shown}: not a proxy URL ({exc})",
                source=source,
                shown=shown,
                exc=str(exc),
            )
        ) from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise UsageError(
            Message(
                "{source} {shown}: proxy scheme {scheme!r} is not supported; use "
                "http://, https://, socks5:// or socks5h://",
                source=source,
                shown=shown,
                scheme=scheme,
            )
        )
    if not parts.hostname:
        raise UsageError(
            Message("{source} {shown}: the proxy URL names no host", source=source, shown=shown)
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise UsageError(
            Message(
                "{source} {shown}: a proxy URL is scheme://[user:password@]host[:port]",
                source=source,
                shown=shown,
            )
        )
    return Proxy(
        scheme,
        parts.hostname,
        port if port is not None else _SCHEMES[scheme],
        unquote(parts.username) if parts.username is not None else None,
        unquote(parts.password) if parts.password is not None else None,
        source,
    )


def _mask(url: str) -> str:
    """``url`` with whatever stands before an ``@`` in its authority as ``***``."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    return f"{scheme}{sep}{authority}{slash}{path}"


@dataclass(frozen=True)
class NoProxyEntry:
    """One ``NO_PROXY`` entry, read."""

    text: str
    everything: bool = False
    domain: str | None = None
    """A name: it and every name under it (``subdomains_only``: only the names under it)."""
    subdomains_only: bool = False
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    port: int | None = None

    def matches(self, host: str, port: int) -> bool:
        if self.everything:
            return True
        if self.port is not None and self.port != port:
            return False
        host = host.strip("[]").lower().rstrip(".")
        if self.network is not None:
            try:
                return ipaddress.ip_address(host) in self.network
            except ValueError:
                return False
        assert self.domain is not None
        if host == self.domain:
            return not self.subdomains_only
        return host.endswith("." + self.domain)


def parse_no_proxy(text: str, source: str = "NO_PROXY") -> tuple[NoProxyEntry, ...]:
    """The entries of a ``NO_PROXY`` value (comma or space separated); a
    :class:`UsageError` naming the entry for one that names no host."""
    entries: list[NoProxyEntry] = []
    for item in text.replace(" ", ",").split(","):
        item = item.strip()
        if item:
            entries.append(_no_proxy_entry(item, source))
    return tuple(entries)


def _no_proxy_entry(item: str, source: str) -> NoProxyEntry:
    if item == "*":
        return NoProxyEntry(item, everything=True)
    body = item
    if "://" in body:
        body = body.split("://", 1)[1]
    body = body.rstrip("/")
    port: int | None = None
    host = body
    if body.startswith("["):
        close = body.find("]")
        if close < 0:
            raise UsageError(
                Message(
                    "{source} entry {item!r}: an unclosed '[' (write [::1] or ::1)",
                    source=source,
                    item=item,
                )
            )
        host, rest = body[1:close], body[close + 1 :]
        if rest:
            port = _port(rest.removeprefix(":"), item, source) if rest.startswith(":") else -1
            if port == -1:
                raise UsageError(
                    Message(
                        "{source} entry {item!r}: expected [address]:port", source=source, item=item
                    )
                )
    elif body.count(":") == 1:
        host, _, text_port = body.partition(":")
        port = _port(text_port, item, source)
    if "/" in host:
        try:
            network = ipaddress.ip_network(host, strict=False)
        except ValueError:
            raise UsageError(
                Message(
                    "{source} entry {item!r}: not a network (write an address and a prefix "
                    "length, e.g. 10.0.0.0/8)",
                    source=source,
                    item=item,
                )
            ) from None
        return NoProxyEntry(item, network=network, port=port)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return NoProxyEntry(item, network=ipaddress.ip_network(address), port=port)
    subdomains_only = host.startswith("*.")
    name = host.removeprefix("*").removeprefix(".").lower().rstrip(".")
    if not name or any(c in name for c in "*/@[] \t") or name.startswith("."):
        raise UsageError(
            Message(
                "{source} entry {item!r}: not a host name, address, network or '*' "
                "(e.g. example.com, .example.com, 10.0.0.0/8, localhost:8080)",
                source=source,
                item=item,
            )
        )
    return NoProxyEntry(item, domain=name, subdomains_only=subdomains_only, port=port)


def _port(text: str, item: str, source: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise UsageError(
            Message(
                "{source} entry {item!r}: {text!r} is not a port (1–65535)",
                source=source,
                item=item,
                text=text,
            )
        )
    return int(text)


@dataclass(frozen=True)
class ProxyRoute:
    """How a URL is reached: through ``proxy``, or direct (``proxy`` is ``None``), and
    why in words (``HTTPS_PROXY``, ``NO_PROXY entry '.corp'``, ``no proxy variable set``)."""

    proxy: Proxy | None
    why: str

    @property
    def shown(self) -> str:
        """``http://proxy:3128 (HTTPS_PROXY)`` or ``direct (no proxy variable set)``."""
        where = "direct" if self.proxy is None else self.proxy.shown
        return f"{where} ({self.why})"


@dataclass(frozen=True)
class ProxyConfig:
    """Where a session's proxy comes from: the environment (the default, as curl and
    httpx read it), a proxy URL given (``--proxy``), or none (``--no-proxy``)."""

    url: str | None = field(default=None, repr=False)
    """``--proxy URL``: used instead of the environment's proxy variables."""
    direct: bool = False
    """``--no-proxy``: every request direct, whatever the environment says."""
    environ: Mapping[str, str] | None = field(default=None, repr=False, compare=False)
    """The variables read; ``None``: the process's environment when a route is asked for."""

    def __post_init__(self) -> None:
        if self.url is not None and self.direct:
            raise UsageError(N_("--proxy URL and --no-proxy contradict each other: give one"))
        if self.url is not None:
            parse_proxy(self.url)

    def route(self, url: str) -> ProxyRoute:
        """The proxy a request to ``url`` goes through, and why; :class:`UsageError`
        for a proxy variable or ``NO_PROXY`` entry that cannot be used."""
        if self.direct:
            return ProxyRoute(None, "--no-proxy")
        env = os.environ if self.environ is None else self.environ
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        for name in ("no_proxy", "NO_PROXY"):
            value = env.get(name)
            if value is None:
                continue
            for entry in parse_no_proxy(value, name):
                if entry.matches(host, port):
                    what = "'*'" if entry.everything else repr(entry.text)
                    return ProxyRoute(None, f"{name} entry {what}")
            break
        if self.url is not None:
            return ProxyRoute(parse_proxy(self.url), "--proxy")
        for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"):
            value = env.get(name)
            if value and value.strip():
                return ProxyRoute(parse_proxy(value, name), name)
        return ProxyRoute(None, "no proxy variable set")


def proxy_pool(
    proxy: Proxy,
    *,
    ssl_context: ssl.SSLContext | None,
    proxy_ssl_context: ssl.SSLContext | None,
    max_connections: int,
    http2: bool,
    network_backend: httpcore.AsyncNetworkBackend,
) -> httpcore.AsyncConnectionPool:
    """httpcore's own pool for ``proxy``: SOCKS5, or HTTP (``CONNECT`` for ``https://``
    URLs, forwarding for ``http://``), connecting through ``network_backend``."""
    if proxy.socks:
        return httpcore.AsyncSOCKSProxy(
            proxy_url=proxy.origin,
            proxy_auth=proxy.auth,
            ssl_context=ssl_context,
            max_connections=max_connections,
            http1=True,
            http2=http2,
            network_backend=network_backend,
        )
    return httpcore.AsyncHTTPProxy(
        proxy_url=proxy.origin,
        proxy_auth=proxy.auth,
        ssl_context=ssl_context,
        proxy_ssl_context=proxy_ssl_context if proxy.scheme == "https" else None,
        max_connections=max_connections,
        http1=True,
        http2=http2,
        network_backend=network_backend,
    )
