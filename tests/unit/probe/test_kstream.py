"""The kernel-stamped stream keeps a read's deadline. Its connection here is a Unix socket
pair, which the stream reads and writes as it does a TCP connection, so the test opens
no internet socket."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time

import httpcore
import pytest

from latdoc.probe._kstream import KernelStream


def test_a_tls_read_whose_answer_cannot_be_sent_keeps_the_read_deadline() -> None:
    """A TLS read may have to send something first (a key update's answer); when the
    peer reads nothing and the socket's send buffer is full, the read still times out
    at its deadline instead of waiting for ever on that write."""

    class AnswersEveryRead:
        """The TLS object: each read is decrypted and leaves bytes to send back."""

        def __init__(self, outgoing: ssl.MemoryBIO) -> None:
            self.outgoing = outgoing

        def read(self, max_bytes: int) -> bytes:
            self.outgoing.write(b"k" * 4096)
            return b"data"

    async def go() -> float:
        raw, peer = socket.socketpair()
        raw.setblocking(False)
        with peer:
            stream = KernelStream(raw, kernel_stamps=False)
            with contextlib.suppress(BlockingIOError):
                while True:  # the peer reads nothing: fill what the kernel holds
                    raw.send(b"x" * 65536)
            stream._tls = AnswersEveryRead(stream._outgoing)  # type: ignore[assignment]
            started = time.perf_counter()
            with pytest.raises(httpcore.ReadTimeout):
                async with asyncio.timeout(3):  # not TimeoutError: the read's own
                    await stream.read(1024, timeout=0.3)
            elapsed = time.perf_counter() - started
            await stream.aclose()
        return elapsed

    assert 0.3 <= asyncio.run(go()) < 2.0
