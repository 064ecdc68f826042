"""Timeouts per phase of a streamed request, as an httpx transport wrapper.

httpx's ``read`` timeout bounds each socket read, the wait for the response
headers included, so one number cannot say "the first byte may take 60 s but a
stream that goes quiet for 10 s has stalled". :class:`TimeoutTransport` (and
:class:`AsyncTimeoutTransport`) sets the read timeout of each attempt to
``first_byte`` while the headers are awaited, then to ``between_chunks`` for the
body: httpcore reads the request's ``timeout`` extension when it starts reading
the body, so the limit is enforced by the socket read itself, in sync and async
code alike. The ``total`` limit is checked at every chunk, and no read may wait
past it.

A timeout becomes :class:`FirstByteTimeout`, :class:`StreamStalled` or
:class:`TotalTimeout`: ``latdoc`` errors that are also ``httpx.ReadTimeout``, so
an SDK that handles httpx's timeouts (the openai SDK's ``APITimeoutError``)
handles them too.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from latdoc.errors import ClientStreamError, ClientTimeout, PolicyError

__all__ = [
    "AsyncTimeoutTransport",
    "FirstByteTimeout",
    "PhaseTimeouts",
    "StreamStalled",
    "StreamTruncated",
    "TimeoutTransport",
    "TotalTimeout",
]

Clock = Callable[[], float]


class FirstByteTimeout(ClientTimeout, httpx.ReadTimeout):
    """No response headers arrived within ``first_byte`` seconds of the request."""


class StreamStalled(ClientTimeout, httpx.ReadTimeout):
    """The response body went quiet for longer than ``between_chunks`` seconds."""


class TotalTimeout(ClientTimeout, httpx.ReadTimeout):
    """The request, body included, took longer than ``total`` seconds."""


class StreamTruncated(ClientStreamError, httpx.RemoteProtocolError):
    """A completion's event stream ended cleanly but without ``data: [DONE]``."""


def _check_limit(name: str, value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyError(f"{name} must be a number of seconds or None, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise PolicyError(f"{name} must be a finite number of seconds > 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class PhaseTimeouts:
    """Limits in seconds for each phase of a request; ``None`` for no limit.

    - ``connect``: DNS, TCP and TLS to a new connection;
    - ``first_byte``: from sending the request to its response headers (the
      server's queue and prefill: set it above the slowest time to first token);
    - ``between_chunks``: the longest silence inside the body; a stalled stream
      fails after this gap, not after ``total``;
    - ``total``: the whole request, headers and body;
    - ``write``, ``pool``: sending the request body; waiting for a pool slot.
    """

    connect: float | None = 5.0
    first_byte: float | None = 60.0
    between_chunks: float | None = 30.0
    total: float | None = 600.0
    write: float | None = 30.0
    pool: float | None = 30.0

    def __post_init__(self) -> None:
        for name in ("connect", "first_byte", "between_chunks", "total", "write", "pool"):
            _check_limit(name, getattr(self, name))

    def httpx_timeout(self) -> httpx.Timeout:
        """The client-wide :class:`httpx.Timeout`; the transport narrows ``read`` per phase."""
        return httpx.Timeout(
            connect=self.connect, read=self.first_byte, write=self.write, pool=self.pool
        )


def _smallest(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


class _Limits:
    """One attempt's clock: when it started and what each read may wait."""

    def __init__(self, timeouts: PhaseTimeouts, clock: Clock, request: httpx.Request) -> None:
        self.timeouts = timeouts
        self.clock = clock
        self.request = request
        self.started = clock()
        self.deadline = None if timeouts.total is None else self.started + timeouts.total
        # A fresh dict per attempt: a retried request must start again at first_byte.
        current: dict[str, Any] = dict(request.extensions.get("timeout", {}))
        current["read"] = _smallest(timeouts.first_byte, self.remaining())
        request.extensions["timeout"] = current
        self.extension = current

    def remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return max(self.deadline - self.clock(), 0.001)

    def body_started(self) -> None:
        self.extension["read"] = _smallest(self.timeouts.between_chunks, self.remaining())

    def past_deadline(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline

    def first_byte_error(self, exc: httpx.ReadTimeout) -> httpx.ReadTimeout:
        if self.past_deadline():
            return self.total_error()
        return FirstByteTimeout(
            f"no response within first_byte={self.timeouts.first_byte:g} s", request=self.request
        )

    def total_error(self) -> TotalTimeout:
        return TotalTimeout(
            f"the request took longer than total={self.timeouts.total:g} s", request=self.request
        )

    def stall_error(self) -> httpx.ReadTimeout:
        if self.past_deadline():
            return self.total_error()
        return StreamStalled(
            f"the stream was silent for more than between_chunks="
            f"{self.timeouts.between_chunks:g} s",
            request=self.request,
        )


class _DoneWatch:
    """Whether a completion's event stream ends with ``data: [DONE]``, as OpenAI's do."""

    def __init__(self, request: httpx.Request, response: httpx.Response) -> None:
        content_type = response.headers.get("content-type", "")
        self.active = (
            response.status_code == 200
            and content_type.startswith("text/event-stream")
            and request.url.path.endswith("completions")
        )
        self.tail = b""

    def feed(self, chunk: bytes) -> None:
        if self.active:
            self.tail = (self.tail + chunk)[-64:]

    def check(self, request: httpx.Request) -> None:
        if self.active and b"[DONE]" not in self.tail:
            raise StreamTruncated(
                "the event stream ended without data: [DONE] (the answer may be cut short)",
                request=request,
            )


class _Stream(httpx.SyncByteStream):
    def __init__(
        self, inner: httpx.SyncByteStream, limits: _Limits, done: _DoneWatch | None
    ) -> None:
        self.inner = inner
        self.limits = limits
        self.done = done

    def __iter__(self) -> Iterator[bytes]:
        limits = self.limits
        try:
            for chunk in self.inner:
                if limits.past_deadline():
                    raise limits.total_error()
                if self.done is not None:
                    self.done.feed(chunk)
                yield chunk
        except httpx.ReadTimeout as exc:
            if isinstance(exc, ClientTimeout):
                raise
            raise limits.stall_error() from exc
        if self.done is not None:
            self.done.check(limits.request)

    def close(self) -> None:
        self.inner.close()


class _AsyncStream(httpx.AsyncByteStream):
    def __init__(
        self, inner: httpx.AsyncByteStream, limits: _Limits, done: _DoneWatch | None
    ) -> None:
        self.inner = inner
        self.limits = limits
        self.done = done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        limits = self.limits
        try:
            async for chunk in self.inner:
                if limits.past_deadline():
                    raise limits.total_error()
                if self.done is not None:
                    self.done.feed(chunk)
                yield chunk
        except httpx.ReadTimeout as exc:
            if isinstance(exc, ClientTimeout):
                raise
            raise limits.stall_error() from exc
        if self.done is not None:
            self.done.check(limits.request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class TimeoutTransport(httpx.BaseTransport):
    """Wraps a transport to enforce :class:`PhaseTimeouts` (see the module's docstring).

    ``detect_truncation``: a completion's event stream that ends without
    ``data: [DONE]`` raises :class:`StreamTruncated` instead of ending quietly.
    """

    def __init__(
        self,
        inner: httpx.BaseTransport,
        timeouts: PhaseTimeouts,
        *,
        detect_truncation: bool = True,
        clock: Clock = time.monotonic,
    ) -> None:
        self.inner = inner
        self.timeouts = timeouts
        self.detect_truncation = detect_truncation
        self.clock = clock

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        limits = _Limits(self.timeouts, self.clock, request)
        try:
            response = self.inner.handle_request(request)
        except httpx.ReadTimeout as exc:
            if isinstance(exc, ClientTimeout):
                raise
            raise limits.first_byte_error(exc) from exc
        limits.body_started()
        assert isinstance(response.stream, httpx.SyncByteStream)
        done = _DoneWatch(request, response) if self.detect_truncation else None
        response.stream = _Stream(response.stream, limits, done)
        return response

    def close(self) -> None:
        self.inner.close()


class AsyncTimeoutTransport(httpx.AsyncBaseTransport):
    """The async :class:`TimeoutTransport`."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        timeouts: PhaseTimeouts,
        *,
        detect_truncation: bool = True,
        clock: Clock = time.monotonic,
    ) -> None:
        self.inner = inner
        self.timeouts = timeouts
        self.detect_truncation = detect_truncation
        self.clock = clock

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        limits = _Limits(self.timeouts, self.clock, request)
        try:
            response = await self.inner.handle_async_request(request)
        except httpx.ReadTimeout as exc:
            if isinstance(exc, ClientTimeout):
                raise
            raise limits.first_byte_error(exc) from exc
        limits.body_started()
        assert isinstance(response.stream, httpx.AsyncByteStream)
        done = _DoneWatch(request, response) if self.detect_truncation else None
        response.stream = _AsyncStream(response.stream, limits, done)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
