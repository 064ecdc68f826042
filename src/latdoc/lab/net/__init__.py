"""The impaired network: two network namespaces joined by a user-space link. Needs root.

- ``_network``: :class:`LabNet`, the network as a whole (namespaces, link, DNS,
  the endpoint in the server namespace), with its :class:`NetSettings`.
- ``_netns``: the namespaces, the state file under :data:`STATE_DIR` and the
  processes of a network, made and removed by name.
- ``_link``: the link's impairments (:class:`LinkSettings`, :class:`LinkStats`, with
  how late the link itself forwarded, :class:`LinkLag`),
  its TUN devices and the client of its control socket.
- ``_link_daemon``: the link process (``python -m latdoc.lab.net._link_daemon``),
  one event loop for packets, DNS and control.
- ``_dns``: the DNS server that answers the lab host name after a known delay,
  and the resolver files that point a namespace at it.

Importing this package starts nothing and needs no root; dnslib is imported by
the link process.
"""

from __future__ import annotations

from latdoc.lab.net._link import LinkLag, LinkSettings, LinkStats
from latdoc.lab.net._netns import STATE_DIR, require_root, teardown
from latdoc.lab.net._network import (
    CLIENT_IP,
    CLIENT_IP6,
    SERVER_IP,
    SERVER_IP6,
    LabEndpoint,
    LabNet,
    NetSettings,
)

__all__ = [
    "CLIENT_IP",
    "CLIENT_IP6",
    "SERVER_IP",
    "SERVER_IP6",
    "STATE_DIR",
    "LabEndpoint",
    "LabNet",
    "LinkLag",
    "LinkSettings",
    "LinkStats",
    "NetSettings",
    "require_root",
    "teardown",
]
