"""Incremental decoder of a streamed JSON array: bytes in, one event per element out.

Google's ``streamGenerateContent`` without ``alt=sse`` answers with one JSON array
whose elements (each a whole ``GenerateContentResponse``) arrive as they are made::

    [{"candidates": [...]}
    ,
    {"candidates": [...], "usageMetadata": {...}}
    ]

:class:`JSONArrayDecoder` reads such a body as it arrives, in pieces of any size, and
hands out each element as an :class:`~latdoc.probe._sse.SSEEvent` (its ``data`` the
element's JSON text, no ``event`` or ``id``) stamped with the ``t_ns`` of the read that
brought its closing brace, so an element is timed when it could first be parsed, as
an SSE event is timed by its dispatching blank line. Every split of the same bytes
into reads yields the same elements.

Only the array's structure is read here: brackets, commas and whitespace between
elements, and each element's braces (those inside strings, escaped quotes included,
are skipped). The structural bytes are ASCII, never part of a multi-byte UTF-8
character, so an element's bytes are decoded only once it is whole. Anything else
between elements (an element that is not an object, text after the closing ``]``, a
body that does not start with ``[``) or an element that is not valid UTF-8 raises
:class:`~latdoc.errors.SSEError`; after that the decoder refuses further input. A body
that ends inside an element or before its ``]`` is a truncated stream: :meth:`close`
returns nothing more, and the dialect's missing end says so.
"""

from __future__ import annotations

import re

from latdoc.errors import SSEError
from latdoc.probe._sse import SSEEvent

__all__ = ["JSONArrayDecoder"]

_OUTSIDE = re.compile(rb'[{}"]')
"""What changes the depth of an element outside its strings."""
_INSIDE = re.compile(rb'["\\]')
"""What ends a string or escapes its next byte."""
_SPACE = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"


class JSONArrayDecoder:
    """Turns the bytes of one streamed JSON array into an event per element.

    Not thread-safe; use one decoder per response body.
    """

    __slots__ = (
        "_closed",
        "_depth",
        "_element",
        "_elements",
        "_ended",
        "_escape",
        "_expect",
        "_failure",
        "_in_string",
        "_offset",
        "_started",
    )

    def __init__(self) -> None:
        self._started = False
        self._ended = False
        self._expect = "element"
        """Between elements: ``element`` (after ``[`` or a comma) or ``comma`` (after one)."""
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._element = bytearray()
        self._elements = 0
        self._offset = 0
        self._failure: str | None = None
        self._closed = False

    @property
    def ended(self) -> bool:
        """Whether the array's closing ``]`` has arrived."""
        return self._ended

    def feed(self, data: bytes, t_ns: int) -> list[SSEEvent]:
        """Read the next piece of the body; return the elements it completed, each
        stamped with ``t_ns``. Raises :class:`~latdoc.errors.SSEError` on a body that is
        no JSON array of objects, or when the decoder already failed or was closed."""
        self._check_usable("feed")
        events: list[SSEEvent] = []
        at, end = 0, len(data)
        if not self._started and self._offset == 0 and data.startswith(_BOM):
            at = len(_BOM)
        while at < end:
            at = self._inside(data, at, events, t_ns) if self._depth else self._between(data, at)
        self._offset += end
        return events

    def close(self, t_ns: int) -> list[SSEEvent]:
        """Mark the end of the body. An element cut off by it is dropped (a truncated
        stream shows as the dialect's missing end); calling ``close`` again returns
        ``[]``."""
        if not self._closed:
            self._check_usable("close")
            self._closed = True
            self._element.clear()
        return []

    def _check_usable(self, method: str) -> None:
        if self._failure is not None:
            raise SSEError(f"{method}() after a decoding error: {self._failure}")
        if self._closed:
            raise SSEError(f"{method}() on a decoder that was already closed")

    def _fail(self, at: int, what: str) -> SSEError:
        self._failure = f"{what} at byte {self._offset + at} of the body: not a streamed JSON array"
        return SSEError(self._failure)

    def _between(self, data: bytes, at: int) -> int:
        """One byte between elements; where to read on."""
        byte = data[at : at + 1]
        if byte in _SPACE:
            return at + 1
        if self._ended:
            raise self._fail(at, f"{_shown(byte)} after the closing ]")
        if not self._started:
            if byte != b"[":
                raise self._fail(at, f"{_shown(byte)} where the array should open")
            self._started = True
            return at + 1
        if byte == b"{" and self._expect == "element":
            self._depth = 1
            self._element += byte
            return at + 1
        if byte == b"," and self._expect == "comma":
            self._expect = "element"
            return at + 1
        if byte == b"]" and (self._expect == "comma" or self._elements == 0):
            self._ended = True
            return at + 1
        raise self._fail(at, f"{_shown(byte)} between elements")

    def _inside(self, data: bytes, at: int, out: list[SSEEvent], t_ns: int) -> int:
        """Bytes of an element, up to its end or the end of the read; where to read on."""
        end = len(data)
        start = at
        while at < end:
            if self._in_string:
                if self._escape:
                    self._escape = False
                    at += 1
                    continue
                match = _INSIDE.search(data, at)
                if match is None:
                    at = end
                    break
                at = match.end()
                if match.group() == b"\\":
                    self._escape = True
                else:
                    self._in_string = False
                continue
            match = _OUTSIDE.search(data, at)
            if match is None:
                at = end
                break
            at = match.end()
            kind = match.group()
            if kind == b'"':
                self._in_string = True
            elif kind == b"{":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    self._element += data[start:at]
                    out.append(SSEEvent(self._text(at), None, None, t_ns))
                    self._element.clear()
                    self._elements += 1
                    self._expect = "comma"
                    return at
        self._element += data[start:at]
        return at

    def _text(self, at: int) -> str:
        try:
            return self._element.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._fail(at, f"an element that is not valid UTF-8 ({exc.reason})") from None


def _shown(byte: bytes) -> str:
    return repr(byte.decode("latin-1"))
