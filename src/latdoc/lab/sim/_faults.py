"""Injected failures: which request gets one, and the bytes (or lack of them) it sees.

A request gets ``config.fault`` with probability ``config.fault_rate`` (a seeded
draw), unless its ``x-lab-fault`` header names one (or ``none``). Responses that
carry a fault say so in an ``x-lab-fault`` header when they send headers at all.

The connection reset is a real TCP RST: :func:`reset_socket` dissolves the
socket's connection with ``connect(AF_UNSPEC)``, which makes Linux send a reset at
once and leaves the descriptor to its owner, the HTTP server, which then sees the
connection fail like any other. The socket is found by the request's client
address among the connections the lab server accepted (``ResetConnection``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import random
import socket
import struct
import sys
from collections.abc import Callable

from starlette.types import Message, Send

from latdoc.lab.sim._config import Fault, LabConfig
from latdoc.lab.sim._request import ApiError

__all__ = [
    "FAULT_HEADER",
    "IMMEDIATE_FAULTS",
    "STREAM_FAULTS",
    "Drip",
    "ResetConnection",
    "choose_fault",
    "fault_response",
    "reset_socket",
    "timeout_response",
]

FAULT_HEADER = b"x-lab-fault"

IMMEDIATE_FAULTS = frozenset({Fault.RATE_LIMIT, Fault.SERVER_ERROR, Fault.UNAVAILABLE, Fault.HTML})
"""Faults answered at once, before the request takes a slot."""

STREAM_FAULTS = frozenset({Fault.RESET, Fault.TRUNCATE, Fault.MALFORMED, Fault.OVERLOADED})
"""Faults that strike when output token ``fault_after_tokens`` is due."""

ResetConnection = Callable[[tuple[str, int]], bool]
"""Reset the TCP connection from this client address; say whether one was found."""

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
