"""TLS for lab servers: one trustme CA per process and server certificates it issues.

Generating keys is the slow part of starting a TLS server, so the CA and each
server certificate are made once per process and reused; every server gets its
own :class:`ssl.SSLContext` (its own ALPN list). trustme is imported when the CA
is first needed, not with this module. A certificate names ``localhost``
and the loopback addresses, the host the server binds, and any extra host names or
IP addresses it is asked to (``latdoc lab serve --tls-name``).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import ssl
from collections.abc import Iterable
from typing import TYPE_CHECKING

from latdoc.errors import LabError, UsageError
from latdoc.i18n import N_, Message

if TYPE_CHECKING:
    import trustme

__all__ = [
    "DEFAULT_IDENTITIES",
    "ca_pem",
    "check_identity",
    "check_tls_names",
    "identities_for",
    "server_context",
]

DEFAULT_IDENTITIES = ("localhost", "127.0.0.1", "::1")
"""Names and addresses every lab server certificate is valid for."""

_WILDCARDS = ("", "0.0.0.0", "::")
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_DNS_NAME = re.compile(rf"(\*\.)?({_LABEL}\.)*{_LABEL}")


@functools.cache
def _ca() -> trustme.CA:
    import trustme  # with cryptography, slow to import: only when a TLS server starts

    return trustme.CA(organization_name="latdoc lab")


@functools.cache
def _leaf(identities: tuple[str, ...]) -> trustme.LeafCert:
    return _ca().issue_cert(*identities)


def ca_pem() -> bytes:
    """The lab CA certificate (PEM) that verifies every lab server."""
    pem: bytes = _ca().cert_pem.bytes()
    return pem


def check_identity(text: str) -> str:
    """``text`` as a certificate identity: an IP address or a lowercase DNS name.

    A DNS name may start with ``*.`` (a wildcard); anything else raises
    :class:`UsageError`.
    """
    name = text.strip()
    if "%" not in name:
        try:
            return str(ipaddress.ip_address(name))
        except ValueError:
            pass
    name = name.lower().removesuffix(".")
    if len(name) > 253 or not _DNS_NAME.fullmatch(name):
        raise UsageError(
            Message("not a host name or IP address for a TLS certificate: {text!r}", text=text)
        )
    return name


def identities_for(host: str, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The certificate identities for a server bound to ``host``, and for ``extra``.

    ``extra`` holds more host names or IP addresses the certificate should be valid
    for (each checked by :func:`check_identity`); repeats are dropped, the order kept.
    """
    if isinstance(extra, str):
        raise TypeError(f"extra is a sequence of names, not one name: {extra!r}")
    base: tuple[str, ...] = DEFAULT_IDENTITIES
    if host not in (*DEFAULT_IDENTITIES, *_WILDCARDS):
        base = (*DEFAULT_IDENTITIES, host)
    return tuple(dict.fromkeys((*base, *(check_identity(name) for name in extra))))


def check_tls_names(names: Iterable[str], tls: bool) -> tuple[str, ...]:
    """A server's extra certificate ``names``, checked; :class:`LabError` without ``tls``."""
    if isinstance(names, str):
        raise TypeError(f"TLS names are a sequence of names, not one name: {names!r}")
    checked = tuple(check_identity(name) for name in names)
    if checked and not tls:
        raise LabError(N_("TLS names are names in the TLS certificate: pass tls=True with them"))
    return checked


def server_context(identities: tuple[str, ...], alpn: list[str]) -> ssl.SSLContext:
    """A server-side context presenting a lab certificate for ``identities``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(alpn)
    _leaf(identities).configure_cert(context)
    return context
