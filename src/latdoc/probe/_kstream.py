"""A TCP (or TLS) connection whose reads carry the kernel's receive stamps.

When the event loop is busy, a read runs late, and a stamp taken when it returns
counts the loop's lateness as the server's. The kernel stamps every segment as it
arrives (software receive timestamps, ``SO_TIMESTAMPNS``) and hands the stamp to
``recvmsg`` as ancillary data; asyncio's transports read with ``recv_into`` and
drop it, and no library reads a TCP socket's receive stamps, so this stream is
written by hand. The socket is read as data arrives by the reader thread of
:mod:`~latdoc.probe._arrivals`, each read queued with its stamp; the stream hands
the reads to httpcore in order, and TLS runs in an ``ssl.SSLObject`` over memory
BIOs, so the stamped reads are the raw ones.

A stamp is converted to the probe's ``perf_counter_ns`` and is never later than the
moment the read returned. Where the socket refuses the option, reads carry no
stamp, they are stamped by the loop, and :attr:`KernelStream.kernel_stamps` is False.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
import sys
from collections.abc import Iterable
from typing import Any

import httpcore

from latdoc.probe._aiostream import set_socket_options, socket_readable
from latdoc.probe._arrivals import READ_SIZE, SO_TIMESTAMPNS, Inbox, watch

__all__ = ["KernelStream", "kernel_stamps_possible", "open_kernel_stream"]


def kernel_stamps_possible() -> bool:
    """Whether this platform gives reads the kernel's receive stamps: Linux, with ``epoll``
    and ``recvmsg``, the platforms this stream serves. Elsewhere ``kernel_stamps=True``
    is ignored, and arrivals are stamped by the loop (a trace's ``arrival_clock`` says
    which)."""
    return (
        sys.platform == "linux" and hasattr(select, "epoll") and hasattr(socket.socket, "recvmsg")
    )


class KernelStream(httpcore.AsyncNetworkStream):
    """One connection on a non-blocking socket; after each :meth:`read`,
    :attr:`arrival_ns` is when the kernel received what it returned."""

    def __init__(self, sock: socket.socket, kernel_stamps: bool) -> None:
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        self.kernel_stamps = kernel_stamps
        self.arrival_ns: int | None = None
        """The kernel's receive stamp (``perf_counter_ns``) of the last raw read that
        delivered the data returned; ``None`` without kernel stamps."""
        self._inbox: Inbox = watch(sock)
        self._left = b""
        self._left_stamp: int | None = None
        self._tls: ssl.SSLObject | None = None
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._sending = asyncio.Lock()

    # -- raw socket ------------------------------------------------------------

    async def _recv(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """The next read the reader thread made, at most ``max_bytes`` of it; sets
        :attr:`arrival_ns` to its stamp. ``TimeoutError`` when none came in ``timeout`` s."""
        if not self._left:
            await self._inbox.wait(timeout)
        return self._take(max_bytes)

    def _take(self, max_bytes: int) -> bytes:
        """At most ``max_bytes`` of what is left of the current read, or of the next one
        queued when nothing is left (then there must be one; empty at the end)."""
        if self._left:
            data, stamp = self._left, self._left_stamp
        else:
            arrival = self._inbox.pop()
            if arrival.error is not None:
                raise arrival.error
            data, stamp = arrival.data, arrival.stamp_ns
        self.arrival_ns = stamp
        if len(data) <= max_bytes:
            self._left = b""
            return data
        self._left, self._left_stamp = data[max_bytes:], stamp
        return data[:max_bytes]

    async def _flush(self) -> None:
        """Send what TLS wrote; one flush at a time, so a read's flush (a TLS key
        update) and a write's never interleave their bytes on the socket."""
        async with self._sending:
            pending = self._outgoing.read()
            if pending:
                await self._loop.sock_sendall(self._sock, pending)

    # -- httpcore's stream ---------------------------------------------------

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            if self._tls is None:
                if self._left or self._inbox.reads:
                    return self._take(max_bytes)  # already here: no deadline to keep
                return await self._recv(max_bytes, timeout)
            return await self._read_tls(max_bytes, timeout)
        except TimeoutError:
            raise httpcore.ReadTimeout(f"no data within {timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def _read_tls(self, max_bytes: int, timeout: float | None) -> bytes:
        assert self._tls is not None
        while True:
            # Socket reads happen outside the handlers, so their errors do not carry
            # the SSL object's "want read" as their context.
            try:
                data = self._tls.read(max_bytes)
            except ssl.SSLWantReadError:
                data = None
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""
            if data is not None:
                if self._outgoing.pending:
                    # Rare (a TLS key update): the read's deadline covers the write it needs.
                    async with asyncio.timeout(timeout):
                        await self._flush()
                return data
            raw = await self._recv(READ_SIZE, timeout)
            if raw:
                self._incoming.write(raw)
            else:
                self._incoming.write_eof()

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                if self._tls is None:
                    await self._loop.sock_sendall(self._sock, buffer)
                else:
                    self._tls.write(buffer)
                    await self._flush()
        except TimeoutError:
            raise httpcore.WriteTimeout(f"could not write within {timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        self._inbox.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
        *,
        session: ssl.SSLSession | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """The TLS handshake over this connection, offering ``session`` to resume."""
        tls = ssl_context.wrap_bio(
            self._incoming, self._outgoing, server_hostname=server_hostname, session=session
        )
        try:
            async with asyncio.timeout(timeout):
                await self._handshake(tls)
        except TimeoutError:
            self._inbox.close()
            raise httpcore.ConnectTimeout(f"TLS handshake took longer than {timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            self._inbox.close()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        self._tls = tls
        return self

    async def _handshake(self, tls: ssl.SSLObject) -> None:
        while True:
            try:
                tls.do_handshake()
                done = True
            except ssl.SSLWantReadError:
                done = False
            await self._flush()
            if done:
                return
            raw = await self._recv(READ_SIZE)
            if not raw:
                raise ConnectionResetError("the peer closed the connection during TLS")
            self._incoming.write(raw)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return self._is_readable()
        if info == "socket":
            return self._sock
        if info == "ssl_object":
            return self._tls
        with contextlib.suppress(OSError):
            if info == "server_addr":
                return self._sock.getpeername()
            if info == "client_addr":
                return self._sock.getsockname()
        return None

    def _is_readable(self) -> bool:
        """True when an idle connection has something to read: the peer closed it."""
        if self._left or self._inbox.reads or self._inbox.ended:
            return True
        return socket_readable(self._sock)


async def open_kernel_stream(
    ip: str,
    port: int,
    timeout: float | None,
    local_address: str | None = None,
    socket_options: Iterable[Any] | None = None,
) -> KernelStream:
    """Connect to ``ip``:``port`` (no name resolution here) with TCP_NODELAY and,
    where the kernel allows, software receive stamps."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    try:
        if local_address:
            sock.bind((local_address, 0))
        async with asyncio.timeout(timeout):
            await loop.sock_connect(sock, (ip, port))
    except TimeoutError:
        sock.close()
        raise httpcore.ConnectTimeout(f"TCP connect took longer than {timeout:g} s") from None
    except OSError as exc:
        sock.close()
        raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
    except BaseException:
        sock.close()
        raise
    set_socket_options(sock, socket_options)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        stamps = True
    except OSError:
        stamps = False
    return KernelStream(sock, stamps)
