"""Incremental ``text/event-stream`` decoder: bytes in, :class:`SSEEvent` out.

:class:`SSEDecoder` implements the WHATWG event-stream parsing rules
(HTML Living Standard, "Server-sent events", section *Parsing an event
stream*) for a body that arrives in arbitrary pieces::

    decoder = SSEDecoder()
    for data, t_ns in reads:
        for event in decoder.feed(data, t_ns):
            ...
    for event in decoder.close(t_ns_at_eof):
        ...

How a read becomes events:

1. The bytes go through an incremental UTF-8 decoder, so a character split
   across reads is emitted once its last byte arrives. One leading U+FEFF
   (byte order mark) on the stream is dropped. Invalid UTF-8 raises
   :class:`~latdoc.errors.SSEError` naming the approximate byte offset in the
   stream; after that the decoder refuses further input.
2. The text is cut into lines at CRLF, LF or lone CR (and nothing else: unlike
   :meth:`str.splitlines`, U+2028, form feed and friends are ordinary
   characters). A CR that ends one read is a complete line ending at once; an
   LF that starts the next read is then swallowed as the rest of that CRLF.
   Only the unfinished last line is kept between reads.
3. Each line is a field: ``name: value`` (one space after the colon is
   dropped), or ``name`` alone with an empty value. ``data`` lines accumulate
   (joined with ``"\\n"``), ``event`` and ``id`` set this event's type and id
   (an ``id`` containing NUL is ignored), ``retry`` and unknown names are
   ignored, and lines starting with ``:`` are comments, only counted; a
   ``: keep-alive`` comment before the first event is stamped as well
   (:attr:`SSEDecoder.keepalive`).
4. A blank line dispatches the event if at least one ``data`` line was seen,
   and then resets the data, event and id buffers either way.

Every split of the same byte stream into reads yields the same events; only
``t_ns`` differs: it is the ``t_ns`` of the :meth:`SSEDecoder.feed` call whose
bytes completed the event (the read holding the dispatching blank line).

Deviations from the browser ``EventSource``, chosen for a measuring client:

* ``event`` and ``id`` are this event's own fields, ``None`` when the event
  did not carry them. An empty ``event:`` is reported as ``""`` rather than
  being replaced by ``"message"``, and ``id`` does not carry over to later
  events (a caller wanting the sticky "last event ID" keeps the last non-None).
* :meth:`SSEDecoder.close` is lenient, like most LLM client libraries: an
  unfinished last line is parsed as a complete line, and an event whose
  terminating blank line never arrived (``data: [DONE]`` at end of body) is
  still dispatched, stamped with the ``t_ns`` given to ``close``.

Only :class:`~latdoc.errors.SSEError` ever escapes ``feed`` and ``close``.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from latdoc.errors import SSEError

__all__ = ["SSEDecoder", "SSEEvent"]

_BOM = "\ufeff"
_KEEPALIVE = "keep-alive"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched server-sent event."""

    data: str
    """The event's ``data`` lines, joined with ``"\\n"``."""
    event: str | None
    """The ``event:`` field, ``None`` when absent."""
    id: str | None
    """The ``id:`` field, ``None`` when absent (or only present with a NUL)."""
    t_ns: int
    """The ``t_ns`` of the ``feed`` (or ``close``) call that completed the event."""


class SSEDecoder:
    """Turns the bytes of one ``text/event-stream`` body into :class:`SSEEvent` s.

    Not thread-safe; use one decoder per response body.
    """

    __slots__ = (
        "_at_start",
        "_closed",
        "_comments",
        "_data",
        "_decoder",
        "_dispatched",
        "_event",
        "_failure",
        "_id",
        "_keepalive",
        "_offset",
        "_partial",
        "_skip_lf",
    )

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._offset = 0
        self._at_start = True
        self._skip_lf = False
        self._partial: list[str] = []
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._comments = 0
        self._dispatched = False
        self._keepalive: tuple[int, int, int] | None = None
        self._failure: str | None = None
        self._closed = False

    @property
    def comments(self) -> int:
        """Comment lines (starting with ``:``) seen so far, e.g. keep-alive pings."""
        return self._comments

    @property
    def keepalive(self) -> tuple[int, int, int] | None:
        """The ``: keep-alive`` comments before the first event: how many, and the
        ``t_ns`` of the first and the last; ``None`` without one. DeepSeek writes them
        while a request waits to be scheduled; other comments (a gateway's
        ``: PROCESSING``, a ping) are only counted."""
        return self._keepalive

    def feed(self, data: bytes, t_ns: int) -> list[SSEEvent]:
        """Decode the next read of the body; return the events it completed.

        ``t_ns`` is the read's arrival time; it stamps every returned event.
        Raises :class:`~latdoc.errors.SSEError` on invalid UTF-8, or when the
        decoder already failed or was closed.
        """
        self._check_usable("feed")
        text = self._decode(data, final=False)
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    return []
        if "\r" in text:
            self._skip_lf = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        rest = lines.pop()
        if not lines:
            if rest:
                self._partial.append(rest)
            return []
        if self._partial:
            self._partial.append(lines[0])
            lines[0] = "".join(self._partial)
            self._partial.clear()
        if rest:
            self._partial.append(rest)
        events: list[SSEEvent] = []
        self._process(lines, t_ns, events)
        return events

    def close(self, t_ns: int) -> list[SSEEvent]:
        """Mark the end of the body; return the events it completed.

        A pending unfinished line is parsed as a complete line, and an event
        with data but no terminating blank line is dispatched, stamped with
        ``t_ns``. Raises :class:`~latdoc.errors.SSEError` if the body ends
        inside a UTF-8 sequence. Calling ``close`` again returns ``[]``.
        """
        if self._closed:
            return []
        self._check_usable("close")
        text = self._decode(b"", final=True)
        self._closed = True
        if text:
            self._partial.append(text)
        events: list[SSEEvent] = []
        if self._partial:
            line = "".join(self._partial)
            self._partial.clear()
            self._process([line], t_ns, events)
        self._process([""], t_ns, events)
        return events

    def _check_usable(self, method: str) -> None:
        if self._failure is not None:
            raise SSEError(f"{method}() after a decoding error: {self._failure}")
        if self._closed:
            raise SSEError(f"{method}() on a decoder that was already closed")

    def _decode(self, data: bytes, *, final: bool) -> str:
        try:
            text = self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            pending = len(self._decoder.getstate()[0])
            at = self._offset - pending + exc.start
            self._failure = (
                f"event stream is not valid UTF-8 near byte {at} of the body ({exc.reason})"
            )
            raise SSEError(self._failure) from None
        self._offset += len(data)
        if self._at_start and text:
            self._at_start = False
            if text[0] == _BOM:
                text = text[1:]
        return text

    def _process(self, lines: list[str], t_ns: int, out: list[SSEEvent]) -> None:
        for line in lines:
            if not line:
                if self._data:
                    out.append(SSEEvent("\n".join(self._data), self._event, self._id, t_ns))
                    self._data = []
                    self._dispatched = True
                self._event = None
                self._id = None
                continue
            colon = line.find(":")
            if colon == 0:
                self._comments += 1
                if not self._dispatched and line[1:].strip().lower() == _KEEPALIVE:
                    seen = self._keepalive
                    self._keepalive = (
                        (1, t_ns, t_ns) if seen is None else (seen[0] + 1, seen[1], t_ns)
                    )
                continue
            if colon < 0:
                name = line
                value = ""
            else:
                name = line[:colon]
                value = line[colon + 2 :] if line.startswith(" ", colon + 1) else line[colon + 1 :]
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value
            elif name == "id" and "\0" not in value:
                self._id = value
