"""A real TCP server on loopback that answers each HTTP request with scripted bytes.

For the failures a well-behaved server never produces: an HTML error page, a body
that is not an event stream, broken JSON, invalid UTF-8, a stream cut mid-way, a
connection reset. Each step of a script is bytes to write, a pause, or an action.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Step = bytes | float | str
"""bytes: write them; float: sleep that many seconds; "close": close; "reset": RST."""


def sse_response(events: Sequence[bytes], *, status: str = "200 OK") -> list[Step]:
    """A chunked ``text/event-stream`` response with one chunk per event."""
    steps: list[Step] = [
        (
            f"HTTP/1.1 {status}\r\ncontent-type: text/event-stream\r\n"
            "transfer-encoding: chunked\r\n\r\n"
        ).encode()
    ]
    steps += [chunk(e) for e in events]
    steps.append(b"0\r\n\r\n")
    return steps


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def plain_response(status: str, content_type: str, body: bytes) -> list[Step]:
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    return [head, body]


@dataclass
class ScriptedServer:
    """``with ScriptedServer(script) as srv:`` serves ``srv.base_url`` until exit."""

    script: Sequence[Step] | Callable[[bytes], Sequence[Step]]
    requests: list[bytes] = field(default_factory=list)
    writes: list[int] = field(default_factory=list)
    """When each bytes step was handed to the socket (``perf_counter_ns``, the clock a
    probe in the same process stamps with): what a test compares arrivals with, so a
    server thread the machine ran late is not read as a late probe."""

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._server.close()
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                self.requests.append(request)
                script = self.script(request) if callable(self.script) else self.script
                for step in script:
                    if isinstance(step, bytes):
                        self.writes.append(time.perf_counter_ns())
                        writer.write(step)
                        await writer.drain()
                    elif isinstance(step, float | int):
                        await asyncio.sleep(step)
                    elif step == "close":
                        writer.close()
                        return
                    elif step == "reset":
                        sock = writer.get_extra_info("socket")
                        sock.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                        writer.transport.abort()
                        return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            if not writer.is_closing():
                writer.close()


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return head + body
