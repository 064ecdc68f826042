"""The recording gateway's ASGI app: each request passed on to the upstream unchanged,
its answer handed back piece by piece as each piece arrives.

The upstream is reached through an ``httpx.AsyncClient`` that ``latdoc.instrument``
times (DNS, TCP, TLS, the send, the server's wait, every read, connection reuse), so
each request becomes the same trace an instrumented application's would. What the
gateway adds is measured beside it: for each piece of the body, from the read that
brought it from the upstream to its hand-over to the application's connection
(``RequestTrace.relay_us``).

What passes unchanged: the method, the path (under the upstream's own path where the
application's base URL left it out), the query, every header but the connection's own
(``Connection``, ``Keep-Alive``, ``Transfer-Encoding``, ``TE``, ``Trailer``,
``Upgrade``, ``Proxy-*``, and ``Host``, which names the upstream), the key, the body;
the answer's status, headers (the same exceptions) and body bytes, compressed or not.
An upstream that cannot be reached is answered ``502`` with a JSON error saying why;
a stream the upstream breaks is broken to the application at the same point.
"""

from __future__ import annotations

import contextvars
import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.probe import TimedStream, now_ns

__all__ = [
    "RELAY",
    "TOKEN_HEADER",
    "AppConnections",
    "Gateway",
    "Upstream",
    "parse_upstream",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

HOP_BY_HOP = frozenset(
    (
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    )
)
"""Headers of one connection, never passed on (RFC 9110, section 7.6.1)."""
TOKEN_HEADER = b"x-latdoc-token"
"""Where a request to a gateway bound beyond this machine carries its token; never
passed on."""

RELAY: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "latdoc_record_relay", default=None
)
"""The relay times (µs) of the request the current task passes on, read when its trace
is kept."""


@dataclass(frozen=True)
class Upstream:
    """Where requests go: an origin and the path the upstream's API lives under."""

    origin: str
    """``scheme://host[:port]``."""
    prefix: str
    """The upstream URL's path without its trailing ``/`` (``/v1``; ``""`` for none)."""

    @property
    def base(self) -> str:
        """The upstream's base URL as given, without its trailing ``/``."""
        return self.origin + self.prefix

    def url(self, path: str, query: bytes) -> str:
        """The upstream URL of a request to ``path``: under :attr:`prefix` unless the
        path already begins with it (an application whose base URL is the gateway's
        ``/v1`` sends ``/v1/chat/completions``, one whose base URL is the bare gateway
        sends ``/chat/completions``: both reach the upstream's ``/v1/chat/completions``)."""
        prefix = self.prefix
        if prefix and path != prefix and not path.startswith(prefix + "/"):
            path = prefix + path
        tail = "?" + query.decode("latin-1") if query else ""
        return self.origin + path + tail


def parse_upstream(text: str) -> Upstream:
    """``--upstream``, read: an ``http`` or ``https`` URL with a host; its query and
    credentials are refused (a key belongs in the application's own header)."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            Message(
                "--upstream {url}: give the provider's base URL, such as https://api.openai.com/v1",
                url=text,
            )
        )
    if parts.username or parts.password or parts.query or parts.fragment:
        bare = parts.scheme + "://" + parts.hostname
        raise UsageError(
            Message(
                "--upstream {url}: give the base URL alone; the application's requests "
                "carry their own key and query",
                url=bare,
            )
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    port = f":{parts.port}" if parts.port is not None else ""
    return Upstream(f"{parts.scheme}://{host}{port}", parts.path.rstrip("/"))


class AppConnections:
    """The application's own connections to the gateway: how many requests came, and
    how many of them opened a connection of their own (a client that does not keep
    connections alive, whose every call to the provider would pay a new setup)."""

    KEPT = 4096
    """Connections remembered at most; past that the oldest are forgotten."""

    def __init__(self) -> None:
        self.requests = 0
        self.opened = 0
        self._seen: dict[tuple[str, int], None] = {}

    def saw(self, client: tuple[str, int] | None) -> None:
        """One request from ``client`` (the application's address and port)."""
        self.requests += 1
        if client is None or client in self._seen:
            return
        self.opened += 1
        self._seen[client] = None
        if len(self._seen) > self.KEPT:
            del self._seen[next(iter(self._seen))]

    def document(self) -> dict[str, int]:
        return {"requests": self.requests, "connections": self.opened}


class Gateway:
    """The ASGI app: every HTTP request passed on to ``upstream`` through ``client``."""

    def __init__(
        self,
        upstream: Upstream,
        client: httpx.AsyncClient,
        *,
        token: str | None = None,
        connections: AppConnections | None = None,
    ) -> None:
        self.upstream = upstream
        self.client = client
        self.token = token
        self.connections = connections if connections is not None else AppConnections()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers") or ())
        if self.token is not None and not _has_token(headers, self.token):
            await _answer(send, 401, "this gateway needs its token in X-Latdoc-Token")
            return
        client = scope.get("client")
        self.connections.saw((client[0], client[1]) if client else None)
        body = await _body(receive)
        raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
        url = self.upstream.url(raw_path.decode("latin-1"), scope.get("query_string", b""))
        request = self.client.build_request(
            scope["method"],
            url,
            headers=[(k, v) for k, v in headers if k.lower() not in _NOT_PASSED],
            content=body,
        )
        relay: list[int] = []
        held = RELAY.set(relay)
        try:
            await self._pass_on(request, send, relay)
        finally:
            RELAY.reset(held)

    async def _pass_on(self, request: httpx.Request, send: Send, relay: list[int]) -> None:
        try:
            response = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            await _answer(send, 502, f"latdoc record could not reach the upstream: {exc}")
            return
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP
                    ],
                }
            )
            stream = response.extensions.get("network_stream")
            timed = stream if isinstance(stream, TimedStream) else None
            stream_id = response.extensions.get("stream_id")
            async for piece in response.aiter_raw():
                read = timed.data_arrival(stream_id) if timed is not None else None
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                if read is not None:
                    relay.append(max(0, now_ns() - read) // 1000)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()


_NOT_PASSED = HOP_BY_HOP | {b"host", b"content-length", TOKEN_HEADER}


def _has_token(headers: list[tuple[bytes, bytes]], token: str) -> bool:
    given = next((v for k, v in headers if k.lower() == TOKEN_HEADER), b"")
    return hmac.compare_digest(given, token.encode())


async def _body(receive: Receive) -> bytes:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def _answer(send: Send, status: int, text: str) -> None:
    body = json.dumps({"error": {"message": text, "type": "latdoc_record"}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
