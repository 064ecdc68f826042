"""Timeouts per phase of a streamed request, as an httpx transport wrapper.

httpx's ``read`` timeout bounds each socket read, the wait for the response
headers included, so one number cannot say "the first token may take 60 s but a
stream that goes quiet for 10 s has stalled". :class:`TimeoutTransport` (and
:class:`AsyncTimeoutTransport`) keeps each attempt's clock: until the first
output token every read may wait what is left of ``first_token`` (the headers,
the role-only event some servers send at once, the queue and the prefill); after
it, ``between_chunks``; never past ``total``. The first token is the first chunk
of an event stream that carries a non-empty ``content``, ``text``, reasoning or
tool-call ``arguments`` string (an event split across chunks is seen one chunk
later), or any body byte of a response that is not an event stream.

The tuned clients bound the socket reads themselves (:mod:`latdoc.client._reads`),
so a stall ends after the gap in sync and async code alike. Around another
transport the wrapper still sets httpx's read timeout per phase, which httpcore
fixes when the body starts (so the gap is then the wider of the two).

A timeout becomes :class:`FirstTokenTimeout`, :class:`StreamStalled` or
:class:`TotalTimeout`: ``latdoc`` errors that are also ``httpx.ReadTimeout``, so
an SDK that handles httpx's timeouts (the openai SDK's ``APITimeoutError``)
handles them too.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from latdoc.client._reads import READ_LIMIT
from latdoc.errors import ClientStreamError, ClientTimeout, PolicyError
from latdoc.i18n import N_, Message

__all__ = [
    "AsyncTimeoutTransport",
    "FirstTokenTimeout",
    "PhaseTimeouts",
    "StreamStalled",
    "StreamTruncated",
    "TimeoutTransport",
    "TotalTimeout",
]

Clock = Callable[[], float]

_OUTPUT = re.compile(
    rb'"(?:content|text|reasoning_content|reasoning|arguments)"\s*:\s*"(?:[^"\\]|\\.)'
)
"""A non-empty output string in a chunk: the first token, not the role-only event."""


class FirstTokenTimeout(ClientTimeout, httpx.ReadTimeout):
    """No output token arrived within ``first_token`` seconds of the request."""


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
        raise PolicyError(
            Message(
                "{name} must be a number of seconds or None, got {value!r}", name=name, value=value
            )
        )
    if not (math.isfinite(value) and value > 0):
        raise PolicyError(
            Message(
                "{name} must be a finite number of seconds > 0, got {value!r}",
                name=name,
                value=value,
            )
        )


@dataclass(frozen=True, slots=True)
class PhaseTimeouts:
    """Limits in seconds for each phase of a request; ``None`` for no limit.

    - ``connect``: DNS, TCP and TLS to a new connection;
    - ``first_token``: from sending the request to the first output token
      (headers, the server's queue and prefill: set it above the slowest time
      to first token you accept);
    - ``between_chunks``: the longest silence inside the body; a stalled stream
      fails after this gap, not after ``total``;
    - ``total``: the whole request, headers and body;
    - ``write``, ``pool``: sending the request body; waiting for a pool slot.
    """

    connect: float | None = 5.0
    first_token: float | None = 60.0
    between_chunks: float | None = 30.0
    total: float | None = 600.0
    write: float | None = 30.0
    pool: float | None = 30.0

    def __post_init__(self) -> None:
        for name in ("connect", "first_token", "between_chunks", "total", "write", "pool"):
            _check_limit(name, getattr(self, name))

    def httpx_timeout(self) -> httpx.Timeout:
        """The client-wide :class:`httpx.Timeout`. ``read`` is left open: the transport
        sets it per phase, and a ``read`` a caller gives one request caps every read."""
        return httpx.Timeout(connect=self.connect, read=None, write=self.write, pool=self.pool)


_CALLER_READ = "latdoc.caller_read"


def _text(limit: float | None) -> str:
    return "none (httpx's own read timeout)" if limit is None else f"{limit:g} s"


def _smallest(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


class _Limits:
    """One attempt's clock: when it started, whether output came, what a read may wait."""

    def __init__(self, timeouts: PhaseTimeouts, clock: Clock, request: httpx.Request) -> None:
        self.timeouts = timeouts
        self.clock = clock
        self.request = request
        self.started = clock()
        self.first_token_by = (
            None if timeouts.first_token is None else self.started + timeouts.first_token
        )
        self.deadline = None if timeouts.total is None else self.started + timeouts.total
        self.output_seen = False
        self.event_stream = False
        # A fresh dict per attempt: a retried request must start again at first_token.
        current: dict[str, Any] = dict(request.extensions.get("timeout", {}))
        # The caller's own read timeout, kept from the first attempt: later attempts
        # find the dict this transport rewrote.
        caller = request.extensions.setdefault(_CALLER_READ, current.get("read"))
        self.caller_read: float | None = caller if isinstance(caller, int | float) else None
        current["read"] = self.read_timeout()
        request.extensions["timeout"] = current
        self.extension = current

    def _left(self, until: float | None) -> float | None:
        return None if until is None else max(until - self.clock(), 0.001)

    def read_timeout(self) -> float | None:
        """What the next read may wait: first token, then the gap, within the total."""
        if self.output_seen:
            phase = self.timeouts.between_chunks
        else:
            phase = self._left(self.first_token_by)
        return _smallest(phase, self._left(self.deadline), self.caller_read)

    def headers_received(self, response: httpx.Response) -> None:
        content_type = response.headers.get("content-type", "")
        self.event_stream = content_type.startswith("text/event-stream")
        # httpcore fixes the body's read timeout when the body starts: give it the
        # widest limit the body can have; the bounded reads narrow it per read.
        first, gap = self._left(self.first_token_by), self.timeouts.between_chunks
        widest = None if first is None or gap is None else max(first, gap)
        self.extension["read"] = _smallest(widest, self._left(self.deadline), self.caller_read)

    def chunk_received(self, chunk: bytes) -> None:
        if not self.event_stream or _OUTPUT.search(chunk):
            self.output_seen = True

    def past(self, until: float | None) -> bool:
        return until is not None and self.clock() >= until

    def timeout_error(self) -> httpx.ReadTimeout:
        """The phase's own timeout, for an ``httpx.ReadTimeout`` raised by a read."""
        t = self.timeouts
        phase = t.between_chunks if self.output_seen else t.first_token
        if self.caller_read is not None and (phase is None or self.caller_read < phase):
            return httpx.ReadTimeout(
                f"no byte within the request's read timeout of {self.caller_read:g} s",
                request=self.request,
            )
        if self.past(self.deadline):
            return TotalTimeout(
                f"the request took longer than total={_text(t.total)}", request=self.request
            )
        if not self.output_seen:
            return FirstTokenTimeout(
                f"no output token within first_token={_text(t.first_token)}",
                request=self.request,
            )
        return StreamStalled(
            f"the stream was silent for longer than between_chunks={_text(t.between_chunks)}",
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
                N_("the event stream ended without data: [DONE] (the answer may be cut short)"),
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
        chunks = iter(self.inner)
        while True:
            # Set and reset around each read, never across a yield: the caller's
            # context is the one the next read runs in.
            token = READ_LIMIT.set(limits)
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except httpx.ReadTimeout as exc:
                if isinstance(exc, ClientTimeout):
                    raise
                raise limits.timeout_error() from exc
            finally:
                READ_LIMIT.reset(token)
            if limits.past(limits.deadline):
                raise limits.timeout_error()
            if chunk and not limits.output_seen:
                limits.chunk_received(chunk)
            if self.done is not None:
                self.done.feed(chunk)
            yield chunk
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
        chunks = aiter(self.inner)
        while True:
            token = READ_LIMIT.set(limits)
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            except httpx.ReadTimeout as exc:
                if isinstance(exc, ClientTimeout):
                    raise
                raise limits.timeout_error() from exc
            finally:
                READ_LIMIT.reset(token)
            if limits.past(limits.deadline):
                raise limits.timeout_error()
            if chunk and not limits.output_seen:
                limits.chunk_received(chunk)
            if self.done is not None:
                self.done.feed(chunk)
            yield chunk
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
        token = READ_LIMIT.set(limits)
        try:
            response = self.inner.handle_request(request)
        except httpx.ReadTimeout as exc:
            if isinstance(exc, ClientTimeout):
                raise
            raise limits.timeout_error() from exc
        finally:
            READ_LIMIT.reset(token)
        limits.headers_received(response)
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
        token = READ_LIMIT.set(limits)
        try:
            response = await self.inner.handle_async_request(request)
        except httpx.ReadTimeout as exc:
            if isinstance(exc, ClientTimeout):
                raise
            raise limits.timeout_error() from exc
        finally:
            READ_LIMIT.reset(token)
        limits.headers_received(response)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        done = _DoneWatch(request, response) if self.detect_truncation else None
        response.stream = _AsyncStream(response.stream, limits, done)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
