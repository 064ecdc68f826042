"""The unit tier: tests that open no socket, start no process and need no lab.

Every test here runs sealed: an internet socket (pytest-socket) or a new process
(:class:`subprocess.Popen`, :func:`os.fork`) fails it at once, so a test that needs a
server belongs in ``tests/integration``; so does a test whose code swallowed the
refusal of its socket. Unix sockets stay open: asyncio's event loop
wakes itself through a pair of them. The tier mirrors ``src/latdoc`` (and ``bench``):
a test of ``latdoc.analysis`` lives in ``tests/unit/analysis``; only there may it read
that package's private modules.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Iterator
from typing import NoReturn

import pytest
import pytest_socket

# The standard library asks ``uname -p`` (a process) the first time anything reads the
# platform's description, and keeps the answer: asked once here, before any test is
# sealed, a unit test that reads it (what every run records of its host) starts none.
platform.platform()
# urllib3 (under botocore and the price library) opens a socket when it is first
# imported, to learn whether the host has IPv6: imported here, before any test is
# sealed, that is not taken for a test's own socket.
import urllib3.util.connection  # noqa: E402, F401


class ProcessBlockedError(RuntimeError):
    """A unit test tried to start a process."""


def _refuse(*_args: object, **_kwargs: object) -> NoReturn:
    raise ProcessBlockedError("a unit test starts no process: move it to tests/integration")


@pytest.fixture(autouse=True)
def sealed(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[None]:
    """No internet socket, no process, for the length of the test."""
    refused: list[str] = []
    blocked = pytest_socket.SocketBlockedError.__init__

    def counted(self: pytest_socket.SocketBlockedError, *args: object, **kwargs: object) -> None:
        refused.append("socket")
        blocked(self, *args, **kwargs)

    monkeypatch.setattr(pytest_socket.SocketBlockedError, "__init__", counted)
    pytest_socket.disable_socket(allow_unix_socket=True)
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse)
    monkeypatch.setattr(os, "fork", _refuse)
    monkeypatch.setattr(os, "posix_spawn", _refuse)
    try:
        yield
    finally:
        pytest_socket.enable_socket()
    if refused and request.node.get_closest_marker("refused_socket") is None:
        pytest.fail("a unit test opened an internet socket: move it to tests/integration")
