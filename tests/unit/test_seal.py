"""The unit tier's seal holds: a socket or a process fails the test that opens it."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys

import pytest
import pytest_socket

from unit.conftest import ProcessBlockedError


@pytest.mark.refused_socket
@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_an_internet_socket_is_refused() -> None:
    with pytest.raises(pytest_socket.SocketBlockedError):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)


@pytest.mark.refused_socket
@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_a_loopback_connection_is_refused() -> None:
    with pytest.raises(pytest_socket.SocketBlockedError):
        socket.create_connection(("127.0.0.1", 9), timeout=0.1)


def test_a_process_is_refused() -> None:
    with pytest.raises(ProcessBlockedError):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_an_event_loop_still_runs() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert asyncio.run(answer()) == 42
