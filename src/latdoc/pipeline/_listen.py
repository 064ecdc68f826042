"""A local server's listening socket, for the commands that serve (``serve``,
``record``): bound before the server starts, so a port that cannot be had is one
usage error and a port of 0 is known at once."""

from __future__ import annotations

import socket

from latdoc.errors import UsageError
from latdoc.i18n import Message

__all__ = ["http_address", "listen_on"]


def listen_on(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A TCP socket listening on ``host:port`` (``[::1]`` or ``::1`` for IPv6; port 0:
    any free one); a :class:`UsageError` saying why when it cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            Message("cannot listen on {host}:{port}: {why}", host=host, port=port,
                    why=exc.strerror or str(exc))
        ) from None  # fmt: skip
    sock.listen(backlog)
    return sock


def http_address(host: str, port: int) -> str:
    """``http://host:port``, an IPv6 address in brackets."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"
