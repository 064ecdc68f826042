"""Injected failures: which request gets one, and the bytes (or lack of them) it sees.

A request gets ``config.fault`` with probability ``config.fault_rate`` (a seeded
draw), unless its ``x-lab-fault`` header names one (or ``none``). Responses that
carry a fault say so in an ``x-lab-fault`` header when they send headers at all.

The connection reset is a real TCP RST: :func:`reset_socket` dissolves the
socket's connection with ``connect(AF_UNSPEC)``, which makes Linux send a reset at
once and leaves the descriptor to its owner, the HTTP server, which then sees the
connection fail like any other. The socket is found by the request's client
address among the connections the lab server accepted (``ResetConnection``).
Before the reset the lab waits (:func:`delivered`) until the peer has acknowledged
every byte written so far, so the tokens sent before the fault reach the client:
a reset discards what its own side has not yet sent, and an HTTP/2 server writes
a stream's data on a later turn of its loop than the one the application's
``send`` returned on.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import json
import random
import socket
import struct
import sys
import termios
from collections.abc import Awaitable, Callable

from starlette.types import Message, Send

from latdoc.lab.sim._call import ApiError
from latdoc.lab.sim._config import Fault, LabConfig

__all__ = [
    "FAULT_HEADER",
    "IMMEDIATE_FAULTS",
    "STREAM_FAULTS",
    "Drip",
    "ResetConnection",
    "choose_fault",
    "delivered",
    "fault_response",
    "reset_socket",
    "timeout_response",
]

FAULT_HEADER = b"x-lab-fault"

IMMEDIATE_FAULTS = frozenset(
    {
        Fault.RATE_LIMIT,
        Fault.SERVER_ERROR,
        Fault.UNAVAILABLE,
        Fault.HTML,
        Fault.BASE_RESP,
        Fault.BASE_RESP_EVENT,
    }
)
"""Faults answered at once, before the request takes a slot."""

STREAM_FAULTS = frozenset({Fault.RESET, Fault.TRUNCATE, Fault.MALFORMED, Fault.OVERLOADED})
"""Faults that strike when output token ``fault_after_tokens`` is due."""

ResetConnection = Callable[[tuple[str, int]], Awaitable[bool]]
"""Reset the TCP connection from this client address; say whether one was found."""

_FLUSH_S = 0.005
"""How long the server is given to hand what it was sent to the kernel."""
_DELIVERY_WAIT_S = 1.0
"""The longest wait for the peer to acknowledge what was written before a reset."""
_DELIVERY_POLL_S = 0.001

_NO_FAULT = "none"

_HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


def choose_fault(config: LabConfig, header: bytes | None, rng: random.Random) -> Fault | None:
    """The fault this request gets: its header's choice, else a draw from the config."""
    if header is not None:
        name = header.decode("latin-1").strip().lower()
        if name == _NO_FAULT:
            return None
        try:
            return Fault(name)
        except ValueError:
            names = ", ".join([*(str(f) for f in Fault), _NO_FAULT])
            raise ApiError(
                400,
                f"Unknown x-lab-fault {name!r}: expected one of {names}.",
                param="x-lab-fault",
            ) from None
    if config.fault is None:
        return None
    if config.fault_rate >= 1.0 or rng.random() < config.fault_rate:
        return config.fault
    return None


def _error_json(message: str, type_: str, code: str | None) -> bytes:
    error = {"message": message, "type": type_, "param": None, "code": code}
    return json.dumps({"error": error}).encode()


_BASE_RESP_MESSAGES = {
    1000: "unknown error",
    1002: "rate limit exceeded(RPM)",
    1004: "login fail: Please carry the API secret key in the 'Authorization' field",
    1008: "insufficient balance",
}


def _base_resp_json(config: LabConfig) -> bytes:
    """MiniMax's answer to a request it refuses, with HTTP 200: no choices, and the
    error's code and message in ``base_resp``."""
    code = config.base_resp_code
    base_resp = {"status_code": code, "status_msg": _BASE_RESP_MESSAGES.get(code, "error")}
    return json.dumps({"id": "", "choices": None, "base_resp": base_resp}).encode()


def fault_response(fault: Fault, config: LabConfig) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Status, headers and body of a fault answered at once (``IMMEDIATE_FAULTS``)."""
    content_type = b"application/json"
    headers = [(FAULT_HEADER, str(fault).encode())]
    if fault is Fault.RATE_LIMIT:
        status = 429
        seconds = config.retry_after_s
        body = _error_json(
            f"Rate limit reached for requests on model {config.model}. "
            f"Please try again in {seconds}s.",
            "requests",
            "rate_limit_exceeded",
        )
        headers += [
            (b"retry-after", b"%d" % seconds),
            (b"x-ratelimit-remaining-requests", b"0"),
        ]
    elif fault is Fault.SERVER_ERROR:
        status = 500
        body = _error_json(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        )
    elif fault is Fault.UNAVAILABLE:
        status = 503
        body = _error_json("The server is overloaded or not ready yet.", "server_error", None)
    elif fault is Fault.HTML:
        status, body, content_type = 502, _HTML_502, b"text/html"
    elif fault in (Fault.BASE_RESP, Fault.BASE_RESP_EVENT):
        status, body = 200, _base_resp_json(config)
        if fault is Fault.BASE_RESP_EVENT:
            body, content_type = b"data: %s\n\n" % body, b"text/event-stream"
    else:
        raise ValueError(f"{fault} is not answered at once")
    headers += [(b"content-type", content_type), (b"content-length", b"%d" % len(body))]
    return status, headers, body


def timeout_response(config: LabConfig) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The 504 a ``hang`` ends with when the client waited ``hang_s``."""
    body = _error_json(
        f"The lab held this request for {config.hang_s:g} s without answering (fault hang).",
        "server_error",
        "timeout",
    )
    headers = [
        (FAULT_HEADER, str(Fault.HANG).encode()),
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
    ]
    return 504, headers, body


class Drip:
    """A ``send`` that writes every body one byte at a time, ``interval_s`` apart."""

    def __init__(self, send: Send, interval_s: float) -> None:
        self.send = send
        self.interval_s = interval_s

    async def __call__(self, message: Message) -> None:
        if message["type"] != "http.response.body":
            await self.send(message)
            return
        body: bytes = message.get("body", b"")
        for i in range(len(body)):
            await self.send(
                {"type": "http.response.body", "body": body[i : i + 1], "more_body": True}
            )
            await asyncio.sleep(self.interval_s)
        if not message.get("more_body", False):
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})


def _unacknowledged(sock: socket.socket) -> int:
    """Bytes written to ``sock`` its peer has not acknowledged (Linux ``SIOCOUTQ``)."""
    try:
        raw = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    except OSError:
        return 0
    return int(struct.unpack("i", raw)[0])


async def delivered(sock: socket.socket) -> None:
    """Wait until the peer has acknowledged every byte written to ``sock``, at most 1 s.

    ``TIOCOUTQ`` on a TCP socket is Linux's ``SIOCOUTQ``: the bytes sent but not
    acknowledged. Elsewhere only the flush wait applies.
    """
    await asyncio.sleep(_FLUSH_S)
    if not sys.platform.startswith("linux"):
        return
    for _ in range(round(_DELIVERY_WAIT_S / _DELIVERY_POLL_S)):
        if _unacknowledged(sock) == 0:
            return
        await asyncio.sleep(_DELIVERY_POLL_S)


class _SockaddrUnspec(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("data", ctypes.c_char * 14)]


def reset_socket(sock: socket.socket) -> None:
    """Make the kernel reset ``sock``'s TCP connection now (RST), keeping the descriptor.

    On Linux ``connect()`` with an ``AF_UNSPEC`` address disconnects a TCP socket,
    sending RST. Elsewhere the socket gets ``SO_LINGER`` 0 (so its close sends RST)
    and is shut down, an abrupt end in either case.
    """
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        address = _SockaddrUnspec(socket.AF_UNSPEC)
        if libc.connect(sock.fileno(), ctypes.byref(address), ctypes.sizeof(address)) == 0:
            return
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
