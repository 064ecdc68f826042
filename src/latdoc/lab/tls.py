"""TLS for lab servers: one trustme CA per process and server certificates it issues.

Generating keys is the slow part of starting a TLS server, so the CA and each
server certificate are made once per process and reused; every server gets its
own :class:`ssl.SSLContext` (its own ALPN list).
"""

from __future__ import annotations

import functools
import ssl

import trustme

__all__ = ["DEFAULT_IDENTITIES", "ca_pem", "identities_for", "server_context"]

DEFAULT_IDENTITIES = ("localhost", "127.0.0.1", "::1")
"""Names and addresses every lab server certificate is valid for."""


@functools.cache
def _ca() -> trustme.CA:
    return trustme.CA(organization_name="latdoc lab")


@functools.cache
def _leaf(identities: tuple[str, ...]) -> trustme.LeafCert:
    return _ca().issue_cert(*identities)


def ca_pem() -> bytes:
    """The lab CA certificate (PEM) that verifies every lab server."""
    pem: bytes = _ca().cert_pem.bytes()
    return pem


def identities_for(host: str) -> tuple[str, ...]:
    """The certificate identities for a server bound to ``host``."""
    if host in DEFAULT_IDENTITIES or host in ("", "0.0.0.0", "::"):
        return DEFAULT_IDENTITIES
    return (*DEFAULT_IDENTITIES, host)


def server_context(identities: tuple[str, ...], alpn: list[str]) -> ssl.SSLContext:
    """A server-side context presenting a lab certificate for ``identities``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(alpn)
    _leaf(identities).configure_cert(context)
    return context
