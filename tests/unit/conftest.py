"""The unit tier: tests that open no socket, start no process and need no lab.

Every test here runs sealed: an internet socket (pytest-socket) or a new process
(:class:`subprocess.Popen`, :func:`os.fork`) fails it at once, so a test that needs a
server belongs in ``tests/integration``. Unix sockets stay open: asyncio's event loop
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


class ProcessBlockedError(RuntimeError):
    """A unit test tried to start a process."""


def _refuse(*_args: object, **_kwargs: object) -> NoReturn:
    raise ProcessBlockedError("a unit test starts no process: move it to tests/integration")


@pytest.fixture(autouse=True)
def sealed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No internet socket, no process, for the length of the test."""
    pytest_socket.disable_socket(allow_unix_socket=True)
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse)
    monkeypatch.setattr(os, "fork", _refuse)
    monkeypatch.setattr(os, "posix_spawn", _refuse)
    try:
        yield
    finally:
        pytest_socket.enable_socket()
