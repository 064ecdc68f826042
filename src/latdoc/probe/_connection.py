"""How a measuring client connects: HTTP version, trust, timeouts, resolver.

Shared by every workload, so a diagnosis step and a probe open connections the
same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from latdoc.probe._backend import Resolver, system_resolver
from latdoc.probe._endpoint import Endpoint, Timeouts
from latdoc.probe._proxy import ProxyConfig
from latdoc.probe._session import ProbeSession, ResendHook


@dataclass(frozen=True)
class ConnectionOptions:
    """How requests reach the endpoint: HTTP/2 offered or not, how TLS is trusted, the
    timeouts, the resolver and the proxy (the environment's unless told otherwise)."""

    http2: bool = False
    cacert: str | None = None
    insecure: bool = False
    timeouts: Timeouts = field(default_factory=Timeouts)
    resolver: Resolver = system_resolver
    proxy: ProxyConfig = field(default_factory=ProxyConfig)

    def session(
        self,
        endpoint: Endpoint,
        *,
        reuse: bool = True,
        max_connections: int = 16,
        on_resend: ResendHook | None = None,
    ) -> ProbeSession:
        """A probe session with these options; ``on_resend`` hears every first attempt
        it would send again (see :data:`~latdoc.probe.ResendHook`)."""
        return ProbeSession(
            endpoint,
            http2=self.http2,
            cacert=self.cacert,
            insecure=self.insecure,
            timeouts=self.timeouts,
            reuse_connections=reuse,
            max_connections=max_connections,
            resolver=self.resolver,
            on_resend=on_resend,
            proxy=self.proxy,
        )
