"""Happy eyeballs (RFC 8305) and TLS resumption in the probe's network backend.

The race is driven through its transport seam (the function that opens one
connection) where a black-holed address is needed without root; the probe itself
connects to a real loopback server. ``tests/integration/test_lab_net.py`` black-holes IPv6 for
real inside a network namespace.
"""

from __future__ import annotations

import asyncio
import time

import httpcore
import pytest

from latdoc.probe._backend import CONNECTION_ATTEMPT_DELAY_S, happy_eyeballs, interleave


def test_families_interleave_first_family_first() -> None:
    addresses = ["2001:db8::1", "2001:db8::2", "192.0.2.1", "192.0.2.2", "192.0.2.3"]
    assert interleave(addresses) == [
        "2001:db8::1",
        "192.0.2.1",
        "2001:db8::2",
        "192.0.2.2",
        "192.0.2.3",
    ]
    assert interleave(["192.0.2.1", "2001:db8::1"]) == ["192.0.2.1", "2001:db8::1"]


def _race(
    addresses: list[str], behaviour: dict[str, float | None], timeout: float | None = 5.0
) -> tuple[str | None, list[tuple[str, str | None, float]], float]:
    """Race ``addresses``; each connects after ``behaviour[address]`` seconds, fails at
    once when the value is negative, never answers when it is None."""
    recorded: list[object] = []
    closed: list[str] = []

    async def connect(address: str, left: float | None) -> str:
        wait = behaviour[address]
        if wait is None:
            await asyncio.sleep(3600)
        elif wait < 0:
            raise httpcore.ConnectError(f"{address}: unreachable")
        else:
            await asyncio.sleep(wait)
        return address

    async def close(stream: str) -> None:
        closed.append(stream)

    async def go() -> str | None:
        try:
            _, address = await happy_eyeballs(
                addresses, connect, timeout, on_attempts=recorded.append, close=close
            )
        except httpcore.ConnectTimeout:
            return None
        return address

    started = time.perf_counter()
    winner = asyncio.run(go())
    took = time.perf_counter() - started
    (attempts,) = recorded
    assert isinstance(attempts, list)
    rows = [(a.address, a.outcome, (a.start - attempts[0].start) / 1e9) for a in attempts]
    return winner, rows, took


def test_a_black_holed_first_family_costs_one_attempt_delay() -> None:
    winner, rows, took = _race(
        ["2001:db8::1", "192.0.2.1"], {"2001:db8::1": None, "192.0.2.1": 0.01}
    )
    assert winner == "192.0.2.1"
    assert [(a, o) for a, o, _ in rows] == [
        ("2001:db8::1", "cancelled"),
        ("192.0.2.1", "connected"),
    ]
    assert rows[1][2] == pytest.approx(CONNECTION_ATTEMPT_DELAY_S, abs=0.05)
    assert took < 0.5


def test_a_failed_attempt_starts_the_next_at_once() -> None:
    winner, rows, took = _race(["2001:db8::1", "192.0.2.1"], {"2001:db8::1": -1, "192.0.2.1": 0.01})
    assert winner == "192.0.2.1"
    assert [o for _, o, _ in rows] == ["failed", "connected"]
    assert rows[1][2] < 0.05
    assert took < 0.2


def test_a_slow_first_attempt_still_wins_if_it_connects_first() -> None:
    behaviour: dict[str, float | None] = {"2001:db8::1": 0.3, "192.0.2.1": 0.2}
    winner, rows, _ = _race(["2001:db8::1", "192.0.2.1"], behaviour)
    assert winner == "2001:db8::1"
    assert [o for _, o, _ in rows] == ["connected", "cancelled"]


def test_the_whole_race_is_bounded_by_the_timeout() -> None:
    behaviour: dict[str, float | None] = {"2001:db8::1": None, "192.0.2.1": None}
    winner, rows, took = _race(["2001:db8::1", "192.0.2.1"], behaviour, timeout=0.4)
    assert winner is None
    assert [o for _, o, _ in rows] == ["timeout", "timeout"]
    assert 0.35 < took < 0.6


def test_every_address_failing_raises_the_last_error() -> None:
    async def go() -> None:
        async def refuse(address: str, left: float | None) -> str:
            raise httpcore.ConnectError(f"{address} refused")

        await happy_eyeballs(["192.0.2.1", "192.0.2.2"], refuse, 1.0)

    with pytest.raises(httpcore.ConnectError, match=r"192\.0\.2\.2 refused"):
        asyncio.run(go())
