"""``latdoc.client`` against real servers: every lab fault gets the right retry decision.

The proof of a decision is the server's own count of the requests it received
(:func:`requests_received` for the lab, ``ScriptedServer.requests`` for the
statuses the lab cannot produce), never the client's word. Timing claims
(``Retry-After``, a stalled stream failing after the gap) are measured.
"""

from __future__ import annotations

import email.utils
from collections.abc import Callable

import httpx
import pytest

from conftest import FAST
from latdoc.client import (
    FailureClass,
    PhaseTimeouts,
    RetryBudget,
    RetryPolicy,
    make_async_client,
    make_client,
    server_wait,
)
from latdoc.lab.sim import LabConfig

CONFIG = LabConfig(latency=FAST, fault_after_tokens=3, drip_interval_ms=0.3, hang_s=5.0)


def test_full_jitter_is_exact_with_a_seeded_draw() -> None:
    policy = RetryPolicy(connect_base_s=0.1, connect_cap_s=0.3, max_attempts=10, budget=None)
    waits = [
        policy.decide(n, FailureClass.TIMEOUT, elapsed_s=0, draw=lambda: 0.5).wait_s
        for n in range(1, 5)
    ]
    assert waits == [0.05, 0.1, 0.15, 0.15]
    server = policy.decide(3, FailureClass.SERVER, elapsed_s=0, draw=lambda: 1.0)
    assert server.wait_s == 2.0
    assert policy.decide(1, FailureClass.CLIENT, elapsed_s=0, status=400).retry is False


def test_server_wait_headers() -> None:
    assert server_wait({"retry-after-ms": "250", "retry-after": "9"}, 0) == 0.25
    assert server_wait({"Retry-After": "2"}, 0) == 2
    date = email.utils.formatdate(1_000_010, usegmt=True)
    assert server_wait({"retry-after": date}, 1_000_000) == 10
    reset = {
        "x-ratelimit-remaining-requests": "5",
        "x-ratelimit-reset-requests": "20ms",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "1m2.5s",
    }
    assert server_wait(reset, 0) == 62.5
    assert server_wait({"x-ratelimit-reset-requests": "6m0s"}, 0) == 360
    assert server_wait({"retry-after": "soon"}, 0) is None


@pytest.mark.parametrize(
    "build",
    [
        lambda: RetryPolicy(max_attempts=None, deadline_s=None),
        lambda: RetryPolicy(max_attempts=0),
        lambda: RetryPolicy(max_attempts=-1),
        lambda: RetryPolicy(max_attempts=2.5),
        lambda: RetryPolicy(deadline_s=-1),
        lambda: RetryPolicy(deadline_s=float("inf")),
        lambda: RetryPolicy(connect_base_s=-0.1),
        lambda: RetryPolicy(server_base_s=float("nan")),
        lambda: RetryPolicy(server_base_s=10, server_cap_s=1),
        lambda: RetryPolicy(max_retry_after_s=-5),
        lambda: RetryBudget(ratio=-0.1),
        lambda: RetryBudget(reserve=float("inf")),
        lambda: PhaseTimeouts(first_token=-1),
        lambda: PhaseTimeouts(between_chunks=0),
        lambda: PhaseTimeouts(total=float("inf")),
        lambda: make_client(concurrency=-1),
        lambda: make_client(concurrency=0),
        lambda: make_async_client(keepalive_expiry=-1),
        lambda: make_client(cpu_count=0),
    ],
)
def test_bad_limits_fail_at_construction(build: Callable[[], object]) -> None:
    from latdoc.errors import PolicyError

    with pytest.raises(PolicyError) as info:
        build()
    assert isinstance(info.value, ValueError)
    assert str(info.value)


def test_a_policy_that_could_retry_forever_says_so() -> None:
    from latdoc.errors import PolicyError

    with pytest.raises(PolicyError, match="retry forever"):
        RetryPolicy(max_attempts=None, deadline_s=None)
    assert RetryPolicy(max_attempts=None, deadline_s=5).max_attempts is None


def _pool(client: httpx.Client | httpx.AsyncClient) -> object:
    transport: object = client._transport
    while hasattr(transport, "inner"):
        transport = transport.inner
    return transport._pool  # type: ignore[attr-defined]


def test_pool_limits_are_twice_the_cores_plus_concurrency() -> None:
    import os

    with make_client(concurrency=5, cpu_count=3, keepalive_expiry=12.0) as client:
        pool = _pool(client)
        assert pool._max_connections == 11  # type: ignore[attr-defined]
        assert pool._max_keepalive_connections == 11  # type: ignore[attr-defined]
        assert pool._keepalive_expiry == 12.0  # type: ignore[attr-defined]
    client_async = make_async_client(concurrency=7)
    assert _pool(client_async)._max_connections == 2 * (os.cpu_count() or 1) + 7  # type: ignore[attr-defined]


@pytest.mark.parametrize(("cores", "concurrency", "size"), [(4, 10, 18), (2, 4, 8), (1, 1, 3)])
def test_the_pool_is_the_methods_one_rule_wherever_it_is_read(
    cores: int, concurrency: int, size: int
) -> None:
    from latdoc.advice import advised_pool
    from latdoc.client import pool_size as client_pool_size
    from latdoc.model import pool_size

    assert pool_size(cores, concurrency) == size
    assert client_pool_size(concurrency, cpu_count=cores) == size
    assert advised_pool(cores, concurrency) == size


def test_the_advice_counts_an_unread_host_as_one_core() -> None:
    from latdoc.advice import advised_pool

    assert advised_pool(0, 0) == 3
