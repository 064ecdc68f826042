"""Tests marked ``alone`` run while no other test of the suite runs.

On several workers (``pytest -n 3``) every test shares the machine with whatever the
other workers run. Most tests take that in their stride, widening their tolerance by the
noise they measure in the same run (:mod:`machine_noise`). A few compare latdoc's times
with a second client's (the real ``curl``) or hold a phase to well under a round trip;
a burst of another worker's work that lands on one client and not the other is no
noise either could measure. Those tests are marked ``alone``: while one runs, the
other workers wait between their tests; the rest run side by side as before.

The workers agree through two lock files (``flock``): a test takes the *room* shared,
an ``alone`` test takes it exclusively. Each first passes through a *turnstile*, held by
an ``alone`` test while it waits for the room, so a stream of ordinary tests cannot
keep it waiting for ever. The lock covers the test's set-up and tear-down with its
call. Without xdist (one process) there is nothing to wait for and no lock is taken.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MARK = "alone"
ENV = "LATDOC_TESTS_LOCKS"
"""The directory of the run's two lock files: made by the controller, which its
workers inherit, and removed when the run ends."""


@contextmanager
def held(directory: Path, *, alone: bool) -> Iterator[None]:
    """Hold the room (exclusively when ``alone``) for the length of the block."""
    turnstile = os.open(directory / "turnstile", os.O_RDWR | os.O_CREAT, 0o600)
    room = os.open(directory / "room", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
    finally:
        os.close(room)
        os.close(turnstile)
