"""Send streamed completion requests and turn each into a :class:`RequestTrace`.

A :class:`ProbeSession` owns one httpcore connection pool on the timed network
backend. Each call to :meth:`ProbeSession.request` binds a fresh
:class:`~latdoc.probe._recorder.Recorder` to the task, sends one request, decodes the
event stream as it arrives and freezes everything measured into a trace. A failed
request never raises: its trace carries a typed :class:`TraceError` naming the
phase. Only cancellation propagates.

Each attempt carries an ``X-Request-ID`` of its own (a uuid4), kept in its trace
with the id the server gave the response. When an attempt fails in a way that
says nothing about the endpoint's speed (``stream_options`` refused, or a
kept-alive connection closed before answering) the request is sent again: the
first attempt is handed to a :data:`ResendHook`, which keeps it and may refuse
the resend (a spent budget), and the trace returned is the second, ``attempt=2``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import httpcore

from latdoc.errors import ErrorKind, StreamFailure, TraceError
from latdoc.probe._backend import (
    Resolver,
    TimedBackend,
    TimedStream,
    TlsSessions,
    system_resolver,
    warm_up,
)
from latdoc.probe._dialect_io import Prompt, dialect_hint, error_message, request_body
from latdoc.probe._endpoint import (
    Endpoint,
    Timeouts,
    make_proxy_ssl_context,
    make_ssl_context,
)
from latdoc.probe._failures import (
    classify,
    closed_before_answering,
    http_error,
    read_error_body,
    redact,
    unframed,
)
from latdoc.probe._freeze import Exchange, TraceTarget, freeze_trace
from latdoc.probe._h1 import LeanPool
from latdoc.probe._poolline import PoolLine
from latdoc.probe._proxy import ProxyConfig, proxy_pool
from latdoc.probe._recorder import Recorder, now_ns
from latdoc.probe._stream_state import EventHook, InfoHook, StreamState
from latdoc.probe._tcpinfo import read_tcp_info
from latdoc.records import RequestTrace

Hooks = tuple[EventHook | None, InfoHook | None]
"""A request's ``on_event`` and ``on_info``."""

__all__ = [
    "Endpoint",
    "EventHook",
    "InfoHook",
    "ProbeSession",
    "ResendHook",
    "Timeouts",
    "make_ssl_context",
]

ResendHook = Callable[[RequestTrace], bool]
"""Called with an attempt the session would send again. True: send it again; the
attempt is the hook's to keep and is not returned. False: the attempt is returned
as the request's result."""

_USER_AGENT = b"latdoc"

_MASKED_SECRET_CHARS = 4
"""A proxy password this long or longer is masked in error messages, which name the
proxy by its URL without it; a shorter one would mask parts of words."""


class ProbeSession:
    """A connection pool on the timed backend, and the requests sent through it."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        http2: bool = False,
        cacert: str | None = None,
        insecure: bool = False,
        timeouts: Timeouts | None = None,
        max_connections: int = 16,
        reuse_connections: bool = True,
        count_tokens: Callable[[str], int] | None = None,
        resolver: Resolver = system_resolver,
        on_resend: ResendHook | None = None,
        proxy: ProxyConfig | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.route = (proxy or ProxyConfig()).route(endpoint.url)
        """The proxy the requests go through (the environment's by default), and why."""
        self.on_resend = on_resend
        self.http2 = http2
        self.timeouts = timeouts or Timeouts()
        self.max_connections = max_connections
        self.reuse_connections = reuse_connections
        self.include_usage = True
        self._count_tokens = count_tokens
        self._resolver = resolver
        self._ssl = make_ssl_context(cacert, insecure=insecure) if endpoint.is_tls else None
        via = self.route.proxy
        self._proxy_ssl = (
            make_proxy_ssl_context(cacert, insecure=insecure)
            if via is not None and via.scheme == "https"
            else None
        )
        self.tls_sessions = TlsSessions()
        """The TLS sessions of this session's connections; offered again only by a request
        sent with ``resume_tls``."""
        self._pool: httpcore.AsyncConnectionPool | None = None
        self._line = PoolLine(max_connections, multiplexed=http2)
        self._headers = self._build_headers()
        self._request_url = httpcore.URL(endpoint.url)
        """The URL parsed once, not at every request."""
        spec = endpoint.spec
        self._signer = None if spec.signer is None else spec.signer(endpoint.api_key, endpoint.url)

    def _build_headers(self) -> list[tuple[bytes, bytes]]:
        headers = [
            (b"content-type", b"application/json"),
            (b"accept", self.endpoint.spec.accept.encode()),
            (b"user-agent", _USER_AGENT),
        ]
        return headers + self.endpoint.spec.auth_headers(self.endpoint.api_key)

    def _new_pool(self, *, resume_tls: bool = False) -> httpcore.AsyncConnectionPool:
        sessions = self.tls_sessions.sharing(offering=True) if resume_tls else self.tls_sessions
        backend = TimedBackend(self._resolver, tls_sessions=sessions)
        proxy = self.route.proxy
        if proxy is not None:
            return proxy_pool(
                proxy,
                ssl_context=self._ssl,
                proxy_ssl_context=self._proxy_ssl,
                max_connections=self.max_connections,
                http2=self.http2,
                network_backend=backend,
            )
        return LeanPool(
            ssl_context=self._ssl,
            max_connections=self.max_connections,
            http2=self.http2,
            network_backend=backend,
        )

    @property
    def _proxy_shown(self) -> str | None:
        proxy = self.route.proxy
        return None if proxy is None else proxy.shown

    @property
    def _tunnel(self) -> bool:
        """Whether requests go through a tunnel the proxy opens (SOCKS5, or ``CONNECT``
        for an ``https://`` URL), rather than forwarded by it."""
        proxy = self.route.proxy
        return proxy is not None and (proxy.socks or self.endpoint.is_tls)

    async def __aenter__(self) -> ProbeSession:
        await warm_up()
        self._pool = self._new_pool()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.aclose()

    async def request(
        self,
        prompt: Prompt,
        max_tokens: int,
        *,
        on_event: EventHook | None = None,
        on_info: InfoHook | None = None,
        headers: Mapping[str, str] | None = None,
        on_resend: ResendHook | None = None,
        resume_tls: bool = False,
        due_ns: int | None = None,
    ) -> RequestTrace:
        """Send one streamed request and return what was measured. Never raises
        for a failed request; the trace's ``error`` says what failed.

        ``resume_tls`` sends it on a new connection of its own that offers the TLS
        session of this session's last connection to the host (the trace's
        ``tls_resumed`` says whether the server took it): the resumed handshake
        beside the full one that connection paid.

        ``prompt`` is the user's text, or a whole conversation as chat messages
        (``{"role": ..., "content": ...}``).

        ``on_event`` sees every decoded JSON event with the arrival time the trace
        uses for it, for fields the trace does not keep; ``on_info`` sees each as the
        dialect read it (its text, its tool calls' parts), with no second parse.
        ``headers`` are sent with this request only (an ``X-Request-ID`` among them
        replaces the session's own).

        ``on_resend`` (else the session's) hears a first attempt before it is sent
        again; without one the resend is made and only ``attempt=2`` tells of it.

        ``due_ns`` (``perf_counter_ns``) is when the request was due: an open loop's
        arrival, a closed loop's last request's end; the trace keeps it
        (:attr:`~latdoc.records.RequestTrace.due_ns`), so its latency is read from there too.
        """
        extra = [
            (k.lower().encode("latin-1"), v.encode("latin-1"))
            for k, v in (headers or {}).items()
            if k.lower() != "x-request-id"
        ]
        given_id = next(
            (v for k, v in (headers or {}).items() if k.lower() == "x-request-id"), None
        )
        hooks = (on_event, on_info)
        trace = await self._send(prompt, max_tokens, hooks, extra, given_id, 1, resume_tls, due_ns)
        rejected_usage = (
            self.include_usage
            and trace.error is not None
            and trace.error.status in (400, 422)
            and "stream_options" in trace.error.message
        )
        if not (rejected_usage or closed_before_answering(trace)):
            return trace
        if rejected_usage:
            self.include_usage = False
        hook = on_resend if on_resend is not None else self.on_resend
        if hook is not None and not hook(trace):
            return trace
        return await self._send(prompt, max_tokens, hooks, extra, None, 2, resume_tls, due_ns)

    async def _send(
        self,
        prompt: Prompt,
        max_tokens: int,
        hooks: Hooks,
        extra: list[tuple[bytes, bytes]],
        request_id: str | None,
        attempt: int,
        resume_tls: bool = False,
        due_ns: int | None = None,
    ) -> RequestTrace:
        request_id = request_id or str(uuid.uuid4())
        headers = [*extra, (b"x-request-id", request_id.encode("latin-1"))]
        if self.reuse_connections and not resume_tls:
            if self._pool is None:
                self._pool = self._new_pool()
            trace = await self._measure(
                self._pool, self._line, prompt, max_tokens, hooks, headers, request_id
            )
        else:
            pool = self._new_pool(resume_tls=resume_tls)
            line = PoolLine(1, multiplexed=False)
            try:
                trace = await self._measure(
                    pool, line, prompt, max_tokens, hooks, headers, request_id
                )
            finally:
                await pool.aclose()
        due = None if due_ns is None else min(0, due_ns - trace.t0_ns)
        return replace(trace, attempt=attempt, due_ns=due)

    async def _measure(
        self,
        pool: httpcore.AsyncConnectionPool,
        line: PoolLine,
        prompt: Prompt,
        max_tokens: int,
        hooks: Hooks,
        extra_headers: list[tuple[bytes, bytes]],
        request_id: str,
    ) -> RequestTrace:
        ep = self.endpoint
        body = request_body(
            ep.spec,
            ep.model,
            prompt,
            max_tokens,
            include_usage=self.include_usage,
            extra=ep.extra_body,
            tools=ep.tools,
        )
        content = json.dumps(body).encode()
        if self._signer is not None:
            signed = [(b"content-type", b"application/json")]
            extra_headers = extra_headers + self._signer("POST", ep.url, signed, content)
        started_ns = time.time_ns()
        started_at = datetime.fromtimestamp(started_ns // 1_000_000_000, UTC).replace(
            microsecond=started_ns // 1000 % 1_000_000
        )
        exchange = Exchange()
        error: TraceError | None = None
        with Recorder() as rec:
            line.enter(rec)
            try:
                async with asyncio.timeout(self.timeouts.total):
                    await self._exchange(pool, rec, content, exchange, hooks, extra_headers)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = classify(exc, rec, self.timeouts, self._proxy_shown)
            finally:
                line.leave(rec)
                if exchange.stream is not None:
                    exchange.stream.forget(rec.stream_id)
            if exchange.done is None:
                exchange.done = now_ns() if error is None else None
        if error is not None and self._signer is not None:
            for secret in self._signer.secrets:
                error = redact(error, secret)
        if error is not None and self.route.proxy is not None:
            for secret in self.route.proxy.secrets:
                if len(secret) >= _MASKED_SECRET_CHARS:
                    error = redact(error, secret)
        ep = self.endpoint
        return freeze_trace(
            rec,
            started_at,
            exchange,
            error,
            len(content),
            TraceTarget(
                ep.url,
                ep.model,
                ep.dialect.name,
                ep.is_tls,
                ep.api_key,
                proxy=self._proxy_shown,
                tunnel=self._tunnel,
            ),
            started_ns=started_ns,
            request_id=request_id,
        )

    async def _exchange(
        self,
        pool: httpcore.AsyncConnectionPool,
        rec: Recorder,
        content: bytes,
        out: Exchange,
        hooks: Hooks,
        extra_headers: list[tuple[bytes, bytes]],
    ) -> None:
        t = self.timeouts
        extensions: dict[str, Any] = {
            "trace": rec.trace,
            "timeout": {"connect": t.connect, "read": t.read, "write": t.write, "pool": t.pool},
        }
        async with pool.stream(
            b"POST",
            self._request_url,
            headers=self._headers + extra_headers,
            content=content,
            extensions=extensions,
        ) as response:
            out.status = response.status
            version = response.extensions.get("http_version")
            out.http_version = version.decode("ascii") if isinstance(version, bytes) else None
            network_stream = response.extensions.get("network_stream")
            if isinstance(network_stream, TimedStream):
                out.stream = network_stream
            out.headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers
            }
            if response.status != 200:
                await self._fail_on_status(response, rec, out)
            ctype = out.headers.get("content-type", "")
            framings = self.endpoint.spec.framings
            framing = next((f for f in framings if f.fits(ctype)), None)
            if framing is None:
                body = await read_error_body(response) if "json" in ctype.lower() else b""
                raise StreamFailure(unframed(body, ctype, self.endpoint.spec, rec.phase))
            state = StreamState(
                rec.t0, self._count_tokens, hooks[0], self.endpoint.dialect, on_info=hooks[1]
            )
            out.state = state
            decoder = out.decoder = framing.decoder()
            stream = out.stream
            async for raw in response.aiter_stream():
                t_read = stream.data_arrival(rec.stream_id) if stream is not None else None
                for event in decoder.feed(raw, t_read or now_ns()):
                    state.on_event(event, rec)
            for event in decoder.close(now_ns()):
                state.on_event(event, rec)
            out.done = now_ns()
            if stream is not None:
                out.tcp_info = read_tcp_info(stream.socket)
            if not state.done_marker and state.finish_reason is None:
                raise StreamFailure(
                    TraceError(
                        ErrorKind.STREAM_BROKEN,
                        rec.phase,
                        f"the stream ended without {self.endpoint.spec.end_marker}",
                    )
                )

    async def _fail_on_status(
        self, response: httpcore.Response, rec: Recorder, out: Exchange
    ) -> None:
        body = await read_error_body(response)
        status = response.status
        message = error_message(body, out.headers.get("content-type"))
        aws_type = out.headers.get("x-amzn-errortype", "").split(":", 1)[0].strip()
        if aws_type and not message.startswith(aws_type):
            message = f"{aws_type}: {message}"  # AWS names the error's type in a header
        ep = self.endpoint
        hint = dialect_hint(ep.url, ep.spec, status, message)
        if hint is not None:
            message += f" ({hint})"
        raise StreamFailure(http_error(status, message, out.headers.get("retry-after")))
