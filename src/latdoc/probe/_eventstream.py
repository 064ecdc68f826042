"""Incremental decoder of AWS's binary event stream: bytes in, one event per message out.

Amazon Bedrock's ``ConverseStream`` answers with ``application/vnd.amazon.eventstream``,
a sequence of binary messages, each::

    [total length: u32][headers length: u32][prelude CRC32: u32]
    [headers: name, type, value …][payload][message CRC32: u32]

whose headers say what it is: ``:message-type`` ``event`` (then ``:event-type`` names
it: ``contentBlockDelta``, ``messageStop`` …), ``exception`` (``:exception-type``
names it: ``throttlingException`` …) or ``error`` (``:error-code`` and
``:error-message``); an event's or exception's payload is JSON
(``:content-type: application/json``).

The framing is read by botocore's own parser, :class:`botocore.eventstream.EventStreamBuffer`:
it takes bytes as they come (``add_data``) and yields each message once its last byte is
in, both CRCs checked, so it can be fed read by read and every message it then yields
was completed by that read. :class:`EventStreamDecoder` feeds it each read and hands out
each message as an :class:`~latdoc.probe._sse.SSEEvent`, stamped with that read's
``t_ns``: its ``data`` the payload's text, its ``event`` the ``:event-type``, the
``:exception-type`` of an exception, or the ``:error-code`` of an error (whose data is
then ``{"message": <:error-message>}``); the dialect tells events from exceptions by
their names. Every split of the same bytes into reads yields the same events.

A CRC that does not match, a frame whose lengths cannot be, a header botocore cannot
read, a payload that is not UTF-8, or a body that ends inside a frame raises
:class:`~latdoc.errors.SSEError` (the session types it with the request's phase);
after that the decoder refuses further input. botocore is the ``bedrock`` extra:
without it making a decoder raises :class:`~latdoc.errors.UsageError` saying so.
"""

from __future__ import annotations

import importlib
import json
import struct
from typing import Any

from latdoc.errors import SSEError, UsageError
from latdoc.i18n import N_
from latdoc.probe._sse import SSEEvent

__all__ = ["BOTOCORE_MISSING", "EventStreamDecoder", "require_botocore"]

BOTOCORE_MISSING = N_(
    "AWS's event stream and request signing need botocore: "
    "pip install 'llm-latency-doctor[bedrock]'"
)

_PRELUDE = 12
_CRC = 4


def require_botocore() -> Any:
    """The ``botocore.eventstream`` module; :class:`UsageError` when botocore is missing."""
    try:
        return importlib.import_module("botocore.eventstream")
    except ImportError:
        raise UsageError(BOTOCORE_MISSING) from None


class EventStreamDecoder:
    """Turns the bytes of one ``application/vnd.amazon.eventstream`` body into events.

    Not thread-safe; use one decoder per response body.
    """

    __slots__ = ("_buffer", "_closed", "_failure", "_module", "_offset", "_pending")

    def __init__(self) -> None:
        self._module = require_botocore()
        self._buffer = self._module.EventStreamBuffer()
        self._offset = 0
        """Bytes of the body in the messages handed out so far."""
        self._pending = 0
        """Bytes fed but not yet in a whole message."""
        self._failure: str | None = None
        self._closed = False

    def feed(self, data: bytes, t_ns: int) -> list[SSEEvent]:
        """Read the next piece of the body; return the messages it completed, each
        stamped with ``t_ns``. Raises :class:`~latdoc.errors.SSEError` on a frame that
        cannot be read, or when the decoder already failed or was closed."""
        self._check_usable("feed")
        if not data:
            return []
        self._buffer.add_data(data)
        self._pending += len(data)
        events: list[SSEEvent] = []
        while True:
            try:
                message = next(self._buffer, None)
            except self._module.ParserError as exc:
                raise self._fail(f"{exc}") from None
            except (KeyError, IndexError, ValueError, struct.error) as exc:
                raise self._fail(f"a header that cannot be read ({type(exc).__name__})") from None
            if message is None:
                return events
            length = message.prelude.total_length
            if length < _PRELUDE + _CRC + message.prelude.headers_length or length > self._pending:
                raise self._fail(f"a frame whose lengths cannot be ({length} bytes in all)")
            self._offset += length
            self._pending -= length
            events.append(self._event(message, t_ns))

    def close(self, t_ns: int) -> list[SSEEvent]:
        """Mark the end of the body: a frame cut off by it raises
        :class:`~latdoc.errors.SSEError`; calling ``close`` again returns ``[]``."""
        if self._closed:
            return []
        self._check_usable("close")
        self._closed = True
        if self._pending:
            raise self._fail(f"the body ended inside a frame, {self._pending} bytes into it")
        return []

    def _check_usable(self, method: str) -> None:
        if self._failure is not None:
            raise SSEError(f"{method}() after a decoding error: {self._failure}")
        if self._closed:
            raise SSEError(f"{method}() on a decoder that was already closed")

    def _fail(self, what: str) -> SSEError:
        self._failure = (
            f"{what}, in the frame at byte {self._offset} of the body: not an AWS event stream"
        )
        return SSEError(self._failure)

    def _event(self, message: Any, t_ns: int) -> SSEEvent:
        headers: dict[str, Any] = message.headers
        kind = headers.get(":message-type", "event")
        if kind == "error":
            code = _text(headers.get(":error-code"))
            said = {"message": _text(headers.get(":error-message")) or "error without details"}
            return SSEEvent(json.dumps(said), code or "error", None, t_ns)
        name = headers.get(":exception-type" if kind == "exception" else ":event-type")
        try:
            data = bytes(message.payload).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._fail(f"a payload that is not valid UTF-8 ({exc.reason})") from None
        return SSEEvent(data, _text(name), None, t_ns)


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value if isinstance(value, str) else None
