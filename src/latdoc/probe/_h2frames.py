"""When each HTTP/2 frame of a multiplexed connection arrived, by stream.

On HTTP/2 one request's task may read the socket for another: httpcore reads under
a lock and files the frames it decodes under their streams, and a stream's task
takes its frames later, when it next runs. The connection's last read is then a
late stamp for the frame a task is handed. :class:`FrameClock` follows the frames
in the bytes each read returns (their 9-byte headers parsed by ``hyperframe``, the
parser ``h2`` itself uses) and keeps, for every stream, the stamp of the read that
completed each of its DATA frames and its response HEADERS, in order. ``h2`` turns
every DATA frame into one event and httpcore hands every such event to the
stream's reader as one piece, so the n-th piece a stream's reader gets is its n-th
DATA frame. Bytes that are no frame (which ``h2`` refuses too) end the following:
the connection's last read stands in from then on.
"""

from __future__ import annotations

from collections import deque

from hyperframe.exceptions import HyperframeError
from hyperframe.frame import Frame

__all__ = ["FrameClock"]

_HEADER = 9
_DATA = 0x0
_HEADERS = 0x1


class FrameClock:
    """The arrival of each DATA frame and the first HEADERS frame of every stream."""

    __slots__ = ("_data", "_head", "_headers", "_left", "_lost", "_stream", "_type")

    def __init__(self) -> None:
        self._head = bytearray()
        self._left = 0
        """Payload bytes of the current frame still to come."""
        self._type: int | None = None
        self._stream = 0
        self._data: dict[int, deque[int]] = {}
        self._headers: dict[int, int] = {}
        self._lost = False

    def feed(self, data: bytes, t_ns: int) -> None:
        """Follow the frames in ``data``, the bytes of one read that arrived at ``t_ns``."""
        if self._lost:
            return
        view = memoryview(data)
        i, end = 0, len(view)
        while i < end:
            if self._type is None:
                take = min(_HEADER - len(self._head), end - i)
                self._head += view[i : i + take]
                i += take
                if len(self._head) < _HEADER:
                    return
                try:
                    frame, self._left = Frame.parse_frame_header(memoryview(bytes(self._head)))
                except HyperframeError:
                    self._lost = True
                    self._data.clear()
                    self._headers.clear()
                    return
                self._head.clear()
                self._type, self._stream = frame.type, frame.stream_id
            take = min(self._left, end - i)
            i += take
            self._left -= take
            if self._left == 0:
                self._complete(t_ns)

    def _complete(self, t_ns: int) -> None:
        if self._type == _DATA:
            self._data.setdefault(self._stream, deque()).append(t_ns)
        elif self._type == _HEADERS:
            self._headers.setdefault(self._stream, t_ns)
        self._type = None

    def data_ns(self, stream_id: int) -> int | None:
        """The arrival of ``stream_id``'s next DATA frame not yet taken, taking it."""
        frames = self._data.get(stream_id)
        return frames.popleft() if frames else None

    def headers_ns(self, stream_id: int) -> int | None:
        """The arrival of ``stream_id``'s response headers."""
        return self._headers.get(stream_id)

    def forget(self, stream_id: int) -> None:
        """Drop what is kept of a stream that is over."""
        self._data.pop(stream_id, None)
        self._headers.pop(stream_id, None)
