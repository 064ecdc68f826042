"""How a streamed answer is framed on the wire: :class:`Framing`, and the three latdoc reads.

:data:`SSE` is ``text/event-stream`` (every dialect's, read by
:class:`~latdoc.probe._sse.SSEDecoder`); :data:`JSON_ARRAY` is one JSON array whose
elements arrive as they are made (Google's ``streamGenerateContent`` without
``alt=sse``, read by :class:`~latdoc.probe._jsonarray.JSONArrayDecoder`);
:data:`EVENT_STREAM` is AWS's binary ``application/vnd.amazon.eventstream`` (Bedrock's
``ConverseStream``, read by :class:`~latdoc.probe._eventstream.EventStreamDecoder`). A
dialect lists the framings it may answer with; the response's ``Content-Type`` picks
one. Every decoder hands out :class:`~latdoc.probe._sse.SSEEvent` s, so the stream's state reads
one shape whatever the framing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from latdoc.probe._eventstream import EventStreamDecoder
from latdoc.probe._jsonarray import JSONArrayDecoder
from latdoc.probe._sse import SSEDecoder, SSEEvent

__all__ = ["EVENT_STREAM", "JSON_ARRAY", "SSE", "EventDecoder", "Framing"]


class EventDecoder(Protocol):
    """Bytes of one response body in, its events out, each stamped with the ``t_ns`` of
    the read that completed it."""

    def feed(self, data: bytes, t_ns: int) -> list[SSEEvent]: ...

    def close(self, t_ns: int) -> list[SSEEvent]: ...


@dataclass(frozen=True)
class Framing:
    """One way a stream is framed: its media type and the decoder that reads it."""

    media_type: str
    """The ``Content-Type`` it comes with (``text/event-stream``), also what a request
    says it accepts."""
    decoder: Callable[[], EventDecoder]
    described: str
    """What it is, for a message: ``an event stream``."""

    def fits(self, content_type: str) -> bool:
        """Whether a response of ``content_type`` is framed this way."""
        return self.media_type in content_type.lower()


SSE = Framing("text/event-stream", SSEDecoder, "an event stream")
JSON_ARRAY = Framing("application/json", JSONArrayDecoder, "a streamed JSON array")
EVENT_STREAM = Framing(
    "application/vnd.amazon.eventstream", EventStreamDecoder, "an AWS event stream"
)
