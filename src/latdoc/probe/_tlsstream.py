"""TLS over a stream that is itself TLS: the endpoint's handshake through an ``https://``
proxy's tunnel.

The timed streams run TLS in an :class:`ssl.SSLObject` over the socket's own bytes,
one layer deep. Through a tunnel to an ``https://`` proxy the endpoint's TLS runs
inside the proxy's: this stream keeps a second :class:`ssl.SSLObject` over memory
buffers and moves its records through the inner stream's reads and writes.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any, TypeVar

import httpcore

_READ_SIZE = 65536
_T = TypeVar("_T")


class TLSOverStream(httpcore.AsyncNetworkStream):
    """A TLS session whose records travel over ``inner``, an already secured stream."""

    def __init__(
        self,
        inner: httpcore.AsyncNetworkStream,
        tls: ssl.SSLObject,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
    ) -> None:
        self._inner = inner
        self._tls = tls
        self._incoming = incoming
        self._outgoing = outgoing

    @classmethod
    async def wrap(
        cls,
        inner: httpcore.AsyncNetworkStream,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None,
        timeout: float | None,
    ) -> TLSOverStream:
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ssl_context.wrap_bio(incoming, outgoing, server_hostname=server_hostname)
        stream = cls(inner, tls, incoming, outgoing)
        try:
            async with asyncio.timeout(timeout):
                await stream._call(tls.do_handshake, timeout)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"TLS handshake took longer than {timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return stream

    async def _call(self, step: Callable[..., _T], timeout: float | None, *args: Any) -> _T:
        while True:
            try:
                result = step(*args)
            except ssl.SSLWantReadError:
                await self._flush(timeout)
                data = await self._inner.read(_READ_SIZE, timeout)
                if data:
                    self._incoming.write(data)
                else:
                    self._incoming.write_eof()
                continue
            await self._flush(timeout)
            return result

    async def _flush(self, timeout: float | None) -> None:
        data = self._outgoing.read()
        if data:
            await self._inner.write(data, timeout)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            data: bytes = await self._call(self._tls.read, timeout, max_bytes)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            return b""
        except ssl.SSLError as exc:
            raise httpcore.ReadError(str(exc)) from exc
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        while view:
            try:
                sent: int = await self._call(self._tls.write, timeout, view)
            except ssl.SSLError as exc:
                raise httpcore.WriteError(str(exc)) from exc
            view = view[sent:]

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return await TLSOverStream.wrap(self, ssl_context, server_hostname, timeout)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._tls
        return self._inner.get_extra_info(info)
