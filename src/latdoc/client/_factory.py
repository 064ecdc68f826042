"""The tuned httpx clients: :func:`make_client` and :func:`make_async_client`.

Each returns a plain ``httpx.Client`` / ``httpx.AsyncClient`` (pass it to
``openai.OpenAI(http_client=...)``) whose transport is, from the outside in:
the :class:`RetryTransport` (when a policy is given), the
:class:`TimeoutTransport`, and httpx's own pool with the limits, keep-alive
expiry, TCP keepalive and HTTP/2 asked for.
"""

from __future__ import annotations

import math
import os
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from latdoc.client._reads import install
from latdoc.client._retry import RetryPolicy
from latdoc.client._retry_transport import AsyncRetryTransport, DecisionHook, RetryTransport
from latdoc.client._timeouts import AsyncTimeoutTransport, PhaseTimeouts, TimeoutTransport
from latdoc.errors import PolicyError
from latdoc.i18n import Message
from latdoc.model import DEFAULT_CONCURRENCY
from latdoc.model import pool_size as model_pool_size

__all__ = [
    "DEFAULT_KEEPALIVE",
    "TcpKeepalive",
    "make_async_client",
    "make_client",
    "pool_limits",
    "pool_size",
]

SocketOption = tuple[int, int, int]


def pool_size(concurrency: int, cpu_count: int | None = None) -> int:
    """Connections to keep: ``2 × CPU cores + concurrency``, the rule latdoc's advice gives.

    ``concurrency`` is the requests the program has in flight at once;
    ``cpu_count`` defaults to this machine's.
    """
    _check_count("concurrency", concurrency)
    cores = (os.cpu_count() or 1) if cpu_count is None else cpu_count
    _check_count("cpu_count", cores)
    return model_pool_size(cores, concurrency)


def pool_limits(
    concurrency: int, *, keepalive_expiry: float | None = 30.0, cpu_count: int | None = None
) -> httpx.Limits:
    """The pool's :class:`httpx.Limits`: :func:`pool_size` connections, all kept alive."""
    size = pool_size(concurrency, cpu_count)
    if keepalive_expiry is not None and not (
        math.isfinite(keepalive_expiry) and keepalive_expiry >= 0
    ):
        raise PolicyError(
            Message(
                "keepalive_expiry must be a finite number >= 0, got {keepalive_expiry!r}",
                keepalive_expiry=keepalive_expiry,
            )
        )
    return httpx.Limits(
        max_connections=size, max_keepalive_connections=size, keepalive_expiry=keepalive_expiry
    )


def _check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PolicyError(
            Message("{name} must be an integer >= 1, got {value!r}", name=name, value=value)
        )


@dataclass(frozen=True, slots=True)
class TcpKeepalive:
    """TCP keepalive probes, so a connection a NAT or load balancer dropped is noticed.

    After ``idle_s`` of silence the kernel probes every ``interval_s``, and gives up
    after ``probes`` unanswered ones. Options the platform lacks are left out.
    """

    idle_s: int = 30
    interval_s: int = 10
    probes: int = 3

    def __post_init__(self) -> None:
        for name in ("idle_s", "interval_s", "probes"):
            _check_count(name, getattr(self, name))

    def socket_options(self) -> list[SocketOption]:
        options: list[SocketOption] = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
        idle = getattr(socket, "TCP_KEEPIDLE", None) or getattr(socket, "TCP_KEEPALIVE", None)
        for option, value in (
            (idle, self.idle_s),
            (getattr(socket, "TCP_KEEPINTVL", None), self.interval_s),
            (getattr(socket, "TCP_KEEPCNT", None), self.probes),
        ):
            if option is not None:
                options.append((socket.IPPROTO_TCP, option, value))
        return options


DEFAULT_KEEPALIVE = TcpKeepalive()
"""Probe after 30 s idle, every 10 s, 3 times: a dead peer is found within a minute."""


def _ssl_context(verify: ssl.SSLContext | str | bool) -> ssl.SSLContext | bool:
    return ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify


def _socket_options(tcp_keepalive: TcpKeepalive | None) -> list[SocketOption]:
    # Small server-sent events must not wait behind Nagle's algorithm.
    options: list[SocketOption] = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    if tcp_keepalive is not None:
        options += tcp_keepalive.socket_options()
    return options


def make_client(
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    base_url: str = "",
    timeouts: PhaseTimeouts | None = None,
    retry: RetryPolicy | None = None,
    on_retry: DecisionHook | None = None,
    http2: bool = False,
    keepalive_expiry: float | None = 30.0,
    tcp_keepalive: TcpKeepalive | None = DEFAULT_KEEPALIVE,
    headers: Mapping[str, str] | None = None,
    verify: ssl.SSLContext | str | bool = True,
    proxy: str | None = None,
    detect_truncation: bool = True,
    cpu_count: int | None = None,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """A tuned ``httpx.Client`` for ``openai.OpenAI(http_client=...)``.

    - ``concurrency``: requests in flight at once; the pool holds
      :func:`pool_size` connections, kept alive ``keepalive_expiry`` seconds;
    - ``timeouts``: :class:`PhaseTimeouts` (first token, between chunks, total ...);
    - ``retry``: a :class:`RetryPolicy`, its decisions passed to ``on_retry``
      (give the SDK ``max_retries=0`` so it does not retry on top);
    - ``http2``, ``tcp_keepalive`` (:class:`TcpKeepalive`; ``None`` turns it off),
      ``headers``, ``verify`` (an SSL context, a CA file or ``False``), ``base_url``;
    - ``proxy``: the proxy URL; ``HTTP(S)_PROXY`` from the environment is not
      read, so that no request bypasses the timeouts and retries;
    - ``detect_truncation``: a completion stream ending without ``[DONE]``
      raises :class:`StreamTruncated`;
    - ``transport``: the innermost transport, instead of httpx's pool (a seam).
    """
    phase = timeouts or PhaseTimeouts()
    limits = pool_limits(concurrency, keepalive_expiry=keepalive_expiry, cpu_count=cpu_count)
    inner = transport
    if inner is None:
        pool = httpx.HTTPTransport(
            verify=_ssl_context(verify),
            proxy=proxy,
            http2=http2,
            limits=limits,
            socket_options=_socket_options(tcp_keepalive),
        )
        install(pool)
        inner = pool
    wrapped: httpx.BaseTransport = TimeoutTransport(
        inner, phase, detect_truncation=detect_truncation
    )
    if retry is not None:
        wrapped = RetryTransport(wrapped, retry, on_decision=on_retry)
    return httpx.Client(
        base_url=base_url,
        headers=headers,
        timeout=phase.httpx_timeout(),
        limits=limits,
        transport=wrapped,
        # Proxies from the environment would get transports of httpx's own,
        # without these timeouts and retries: a proxy is named with ``proxy``.
        trust_env=False,
    )


def make_async_client(
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    base_url: str = "",
    timeouts: PhaseTimeouts | None = None,
    retry: RetryPolicy | None = None,
    on_retry: DecisionHook | None = None,
    http2: bool = False,
    keepalive_expiry: float | None = 30.0,
    tcp_keepalive: TcpKeepalive | None = DEFAULT_KEEPALIVE,
    headers: Mapping[str, str] | None = None,
    verify: ssl.SSLContext | str | bool = True,
    proxy: str | None = None,
    detect_truncation: bool = True,
    cpu_count: int | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """A tuned ``httpx.AsyncClient`` for ``openai.AsyncOpenAI(http_client=...)``.

    The same options as :func:`make_client`.
    """
    phase = timeouts or PhaseTimeouts()
    limits = pool_limits(concurrency, keepalive_expiry=keepalive_expiry, cpu_count=cpu_count)
    inner = transport
    if inner is None:
        pool = httpx.AsyncHTTPTransport(
            verify=_ssl_context(verify),
            proxy=proxy,
            http2=http2,
            limits=limits,
            socket_options=_socket_options(tcp_keepalive),
        )
        install(pool)
        inner = pool
    wrapped: httpx.AsyncBaseTransport = AsyncTimeoutTransport(
        inner, phase, detect_truncation=detect_truncation
    )
    if retry is not None:
        wrapped = AsyncRetryTransport(wrapped, retry, on_decision=on_retry)
    return httpx.AsyncClient(
        base_url=base_url,
        headers=headers,
        timeout=phase.httpx_timeout(),
        limits=limits,
        transport=wrapped,
        # Proxies from the environment would get transports of httpx's own,
        # without these timeouts and retries: a proxy is named with ``proxy``.
        trust_env=False,
    )
