"""Reading one HTTP/1.1 response on the probe's own connections (:mod:`._h1`), parsed
by llhttp (httptools): the parser's callbacks collect the status, the headers and the
body pieces, an interim answer passed over for the final one; the exchange reads the
stream only when asked for more, hands up every read's body at once, raises httpcore's
exceptions for a response cut short or malformed, and says whether the connection may
be used again.
"""

from __future__ import annotations

from typing import Any

import httpcore
import httptools

__all__ = ["Exchange"]

_READ_BYTES = 64 * 1024
"""The most one read takes, as httpcore's connection reads."""
_NO_BODY = frozenset((204, 304))


class _Response:
    """llhttp's callbacks for one response: its status, headers and body pieces. An
    interim answer (``100 Continue``, ``103 Early Hints``) is passed over for the final
    one; a message after the final one's end is marked, not read."""

    __slots__ = (
        "body",
        "complete",
        "extra",
        "headers",
        "headers_done",
        "interim",
        "length_known",
        "parser",
        "reason",
        "status",
        "version",
    )

    def __init__(self) -> None:
        self.parser: Any = None
        """The parser, for its status and version as the headers end; let go at the end
        (it holds this object too)."""
        self.status = 0
        self.version = "1.1"
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.interim = False
        self.length_known = False
        """Whether a Content-Length or chunked framing ends the body (else the close does)."""
        self.body: list[bytes] = []
        self.complete = False
        self.extra = False
        """Another message began after this one's end: not ours, and the connection
        cannot be trusted again."""

    def on_message_begin(self) -> None:
        if self.complete:
            self.extra = True

    def on_status(self, reason: bytes) -> None:
        if not self.complete:
            self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.complete:
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if self.complete:
            return
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            self.interim = True
            return
        self.status = status
        self.version = self.parser.get_http_version()
        self.headers_done = True
        self.length_known = status in _NO_BODY or any(
            name.lower() in (b"content-length", b"transfer-encoding") for name, _ in self.headers
        )

    def on_body(self, body: bytes) -> None:
        if not self.complete:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
            self.reason = b""
            self.headers = []
            return
        if not self.complete:
            self.complete = True
            self.parser = None


class Exchange:
    """One request's response on an HTTP/1.1 connection, read as it is asked for."""

    def __init__(self, stream: httpcore.AsyncNetworkStream, timeout: float | None) -> None:
        self.stream = stream
        self.timeout = timeout
        self.answer = _Response()
        self.parser = httptools.HttpResponseParser(self.answer)
        self.answer.parser = self.parser
        self.received = False

    def _feed(self, data: bytes) -> None:
        answer = self.answer
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            raise httpcore.RemoteProtocolError("the server switched protocols unasked") from None
        except httptools.HttpParserError as exc:
            if answer.complete:
                answer.extra = True  # something after the end: not ours to parse
                return
            raise httpcore.RemoteProtocolError(str(exc) or "malformed response") from exc

    async def _read(self) -> bytes:
        data = await self.stream.read(_READ_BYTES, self.timeout)
        if data:
            self.received = True
        return data

    async def head(self) -> None:
        """Read until the final response's status line and headers are in."""
        answer = self.answer
        while not answer.headers_done:
            data = await self._read()
            if not data:
                if not self.received:
                    raise httpcore.RemoteProtocolError(
                        "Server disconnected without sending a response."
                    )
                raise httpcore.RemoteProtocolError(
                    "peer closed connection without sending complete response headers"
                )
            self._feed(data)

    def take(self) -> bytes:
        """The body that has arrived and not been handed up."""
        body = self.answer.body
        if not body:
            return b""
        data = body[0] if len(body) == 1 else b"".join(body)
        body.clear()
        return data

    async def more(self) -> bool:
        """Read once more; ``False`` when the body has ended."""
        answer = self.answer
        if answer.complete:
            return False
        data = await self._read()
        if data:
            self._feed(data)
            return True
        if answer.length_known:
            raise httpcore.RemoteProtocolError(
                "peer closed connection without sending complete message body"
            )
        answer.complete = True  # a body the close ends
        return False

    @property
    def reusable(self) -> bool:
        """Read to its end, framed, and the server keeps the connection alive (read from
        the headers: llhttp forgets its own answer once the message is complete)."""
        answer = self.answer
        if not answer.complete or not answer.length_known or answer.extra:
            return False
        tokens = {
            token.strip().lower()
            for name, value in answer.headers
            if name.lower() == b"connection"
            for token in value.split(b",")
        }
        if answer.version == "1.0":
            return b"keep-alive" in tokens
        return b"close" not in tokens
