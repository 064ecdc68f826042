"""Per-request timing state, filled by the network backend and httpcore's trace events.

A :class:`Recorder` is bound to the running task through a context variable for the
duration of one request. The network backend (DNS, connect, TLS, socket reads and
writes) and httpcore's ``trace`` extension both run in that task, so each writes
its timestamps straight into the request's own recorder; no lookup by connection
is needed. The one exception is HTTP/2, where a socket read may run in another
request's task: multiplexed streams therefore do not report reads here, and the
first byte comes from the response-headers trace event instead, stamped with the
arrival of the stream's own HEADERS frame.

Through a proxy's tunnel the connection carries the proxy's handshake first (an HTTP
``CONNECT`` exchange, or SOCKS5's): its writes and reads are the phase
``proxy_connect``, never the request's send or first byte, and its end is the arrival
of the proxy's answer.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any, Protocol

from latdoc.errors import Phase
from latdoc.probe import _tcpinfo as tcpinfo


class SocketStream(Protocol):
    """What the recorder needs of a network stream: the socket under it, for TCP_INFO,
    and when a response's headers arrived."""

    @property
    def socket(self) -> Any: ...

    def headers_arrival(self, stream_id: int | None) -> int | None: ...


now_ns = time.perf_counter_ns

_current: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "latdoc_recorder", default=None
)

_ACK_SPINS = 16
_ACK_FIRST_SLEEP_S = 0.0002
_ACK_MAX_SLEEP_S = 0.002
_ACK_GIVE_UP_S = 120.0


def current() -> Recorder | None:
    return _current.get()


class Recorder:
    """Mutable timing marks of one request, as absolute ``perf_counter_ns`` values."""

    def __init__(self) -> None:
        self.t0 = now_ns()
        self.phase = Phase.QUEUE
        self.pool_granted: int | None = None
        """When the pool had a connection free for this request (set by the session)."""
        self.queue_done: int | None = None
        self.dns_done: int | None = None
        self.connect_done: int | None = None
        self.tls_done: int | None = None
        self.write_start: int | None = None
        self.body_written: int | None = None
        self.acked: int | None = None
        self.first_byte: int | None = None
        self.new_connection = False
        self.stream: SocketStream | None = None
        self.stream_id: int | None = None
        """The request's HTTP/2 stream on a multiplexed connection."""
        self.bytes_written = 0
        self.unacked_before = 0
        self.bytes_read = 0
        self.attempts: list[Any] = []
        """The connection attempts of a new connection (``_backend.Attempt``), filled in
        by the race while it runs."""
        self.tls_resumed: bool | None = None
        self.tls_session_offered = False
        self.proxy_connect_done: int | None = None
        """When the proxy's tunnel was open (its ``CONNECT`` answer or SOCKS5 reply)."""
        self.proxy_closed = False
        """The proxy closed the connection during its handshake."""
        self._tunnelling = False
        self._tunnel_read: int | None = None
        self._ack_task: asyncio.Task[None] | None = None
        self._token: contextvars.Token[Recorder | None] | None = None

    def __enter__(self) -> Recorder:
        self._token = _current.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ack_task is not None and not self._ack_task.done():
            self._ack_task.cancel()
        if self._token is not None:
            _current.reset(self._token)
            self._token = None

    # -- called by the network backend ---------------------------------------

    def on_dns_start(self) -> None:
        if self.queue_done is None:
            self.queue_done = now_ns()
        self.new_connection = True
        self.phase = Phase.DNS

    def on_dns_done(self) -> None:
        self.dns_done = now_ns()
        self.phase = Phase.CONNECT

    def on_attempts(self, attempts: list[Any]) -> None:
        self.attempts = attempts

    def on_connect_done(self) -> None:
        self.connect_done = now_ns()

    def on_tls_start(self) -> None:
        self.phase = Phase.TLS

    def on_tls_done(self, resumed: bool | None = None, offered: bool = False) -> None:
        self.tls_done = now_ns()
        self.tls_resumed = resumed
        self.tls_session_offered = offered

    def on_write(self, stream: SocketStream, nbytes: int) -> None:
        if self._tunnelling:
            return
        if self.write_start is None:
            self.write_start = now_ns()
        if self.stream is None:
            state = tcpinfo.send_state(stream.socket)
            self.unacked_before = state.unacked_segments if state is not None else 0
        self.stream = stream
        self.bytes_written += nbytes

    def on_read(self, t_ns: int, nbytes: int) -> None:
        if self._tunnelling:
            if nbytes:
                self._tunnel_read = t_ns
            else:
                self.proxy_closed = True
            return
        if self.body_written is None or nbytes == 0:
            return
        self.bytes_read += nbytes
        if self.first_byte is None:
            self.first_byte = t_ns
            if self.phase is Phase.WAIT:
                self.phase = Phase.FIRST_TOKEN

    # -- httpcore trace extension ---------------------------------------------

    async def trace(self, name: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` request extension: stamps the protocol-level events."""
        _, _, event = name.partition(".")
        if self._tunnel_event(event, info):
            return
        if event == "send_request_headers.started":
            if self.queue_done is None:
                self.queue_done = now_ns()
            self.phase = Phase.SEND
        elif event == "send_request_body.complete":
            self.body_written = now_ns()
            self.phase = Phase.WAIT
            self._start_ack_watch()
        elif event == "receive_response_headers.started":
            self.stream_id = info.get("stream_id")
        elif event == "receive_response_headers.complete":
            t = now_ns()
            stream = self.stream
            arrived = stream.headers_arrival(self.stream_id) if stream is not None else None
            if arrived is not None and self.body_written is not None:
                # The headers came in the connection's last read or an earlier one.
                t = max(self.body_written, min(t, arrived))
            if self.first_byte is None:
                self.first_byte = t
            self.phase = Phase.FIRST_TOKEN
        elif event == "connect_tcp.started" and self.queue_done is None:
            self.queue_done = now_ns()

    def _tunnel_event(self, event: str, info: dict[str, Any]) -> bool:
        """Whether ``event`` belongs to a proxy's handshake (and is recorded as such)."""
        if event == "setup_socks5_connection.started" or (
            event == "send_request_headers.started"
            and getattr(info.get("request"), "method", None) == b"CONNECT"
        ):
            self._tunnelling = True
            self._tunnel_read = None
            self.phase = Phase.PROXY_CONNECT
            return True
        if not self._tunnelling:
            return False
        if event in ("setup_socks5_connection.complete", "receive_response_headers.complete"):
            self._tunnelling = False
            answer = info.get("return_value")
            status = answer[1] if isinstance(answer, tuple) and len(answer) > 1 else 200
            if isinstance(status, int) and 200 <= status < 300:
                t = now_ns()
                read = self._tunnel_read
                self.proxy_connect_done = t if read is None else min(t, read)
        return True

    # -- end of send: the peer's ACK of the last byte -------------------------

    def _ack_seen(self, sock: Any) -> bool | None:
        """Whether the request has reached the peer (stamping when it has); ``None``
        when the platform has no ``TCP_INFO``."""
        state = tcpinfo.send_state(sock)
        if state is None:
            return None
        if state.delivered(self.unacked_before):
            self.acked = now_ns()
            return True
        return False

    def _start_ack_watch(self) -> None:
        sock = self.stream.socket if self.stream is not None else None
        if self._ack_seen(sock) is False:
            self._ack_task = asyncio.get_running_loop().create_task(self._watch_ack(sock))

    async def _watch_ack(self, sock: Any) -> None:
        deadline = now_ns() + int(_ACK_GIVE_UP_S * 1e9)
        spins = 0
        delay = _ACK_FIRST_SLEEP_S
        while now_ns() < deadline:
            if spins < _ACK_SPINS:
                spins += 1
                await asyncio.sleep(0)
            else:
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, _ACK_MAX_SLEEP_S)
            if self._ack_seen(sock) is not False or self.first_byte is not None:
                return

    @property
    def sent(self) -> tuple[int | None, bool]:
        """End of the send phase and whether it is the peer's acknowledgement."""
        if self.body_written is None:
            return None, False
        written = self.body_written
        if self.first_byte is not None:
            # A kernel-stamped first byte can precede the loop's stamp of the write's
            # return: the request was on the wire before its answer arrived.
            written = min(written, self.first_byte)
        if self.acked is not None:
            end = self.acked if self.first_byte is None else min(self.acked, self.first_byte)
            return max(end, written), True
        if self.first_byte is not None and self._ack_task is not None:
            return self.first_byte, True
        return written, False
