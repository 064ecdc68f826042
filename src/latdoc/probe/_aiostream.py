"""httpcore network streams on plain asyncio streams.

httpcore's AnyIO backend opens a cancel scope around every read; at hundreds of
streams that bookkeeping was a quarter of the probe's CPU. This backend speaks to
asyncio's own streams, with ``asyncio.timeout`` (no timer where none is asked for),
and maps their errors to httpcore's exceptions as httpcore's own backends do.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One TCP (or TLS) connection as an httpcore network stream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError:
            raise httpcore.ReadTimeout(f"no data within {timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                self._writer.write(buffer)
                await self._writer.drain()
        except TimeoutError:
            raise httpcore.WriteTimeout(f"could not write within {timeout:g} s") from None
        except (OSError, ssl.SSLError, RuntimeError) as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError:
            self._writer.transport.abort()
            raise httpcore.ConnectTimeout(f"TLS handshake took longer than {timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            self._writer.transport.abort()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return self._is_readable()
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        return self._writer.get_extra_info(info)

    def _is_readable(self) -> bool:
        """True when an idle connection has something to read: the peer closed it."""
        if self._reader.at_eof() or self._writer.is_closing():
            return True
        return socket_readable(self._writer.get_extra_info("socket"))


def socket_readable(sock: socket.socket | None) -> bool:
    """True when ``sock`` has something to read now, or is gone (none, closed or not
    pollable): on an idle connection, that the peer closed it."""
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


async def open_stream(
    ip: str,
    port: int,
    timeout: float | None,
    local_address: str | None = None,
    socket_options: Iterable[Any] | None = None,
) -> AsyncioStream:
    """Connect to ``ip``:``port`` (no name resolution here) with TCP_NODELAY."""
    local = (local_address, 0) if local_address else None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(ip, port, local_addr=local)
    except TimeoutError:
        raise httpcore.ConnectTimeout(f"TCP connect took longer than {timeout:g} s") from None
    except OSError as exc:
        raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
    sock = writer.get_extra_info("socket")
    if sock is not None:
        set_socket_options(sock, socket_options)
    return AsyncioStream(reader, writer)


def set_socket_options(sock: socket.socket, socket_options: Iterable[Any] | None) -> None:
    """TCP_NODELAY where the socket takes it, then the caller's own options."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for option in socket_options or ():
        sock.setsockopt(*option)
