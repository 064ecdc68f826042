"""The lock that lets a test marked ``alone`` run while no other test runs."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import alone


def _enter(directory: Path, name: str, *, is_alone: bool, hold_s: float, log: list[str]) -> None:
    with alone.held(directory, alone=is_alone):
        log.append(f"{name} in")
        time.sleep(hold_s)
        log.append(f"{name} out")


def _start(
    directory: Path, name: str, is_alone: bool, hold_s: float, log: list[str]
) -> threading.Thread:
    thread = threading.Thread(
        target=_enter,
        args=(directory, name),
        kwargs={"is_alone": is_alone, "hold_s": hold_s, "log": log},
    )
    thread.start()
    return thread


def test_ordinary_tests_share_the_room(tmp_path: Path) -> None:
    log: list[str] = []
    first = _start(tmp_path, "a", False, 0.3, log)
    time.sleep(0.05)
    second = _start(tmp_path, "b", False, 0.05, log)
    first.join(5)
    second.join(5)
    # b entered and left while a was still in.
    assert log == ["a in", "b in", "b out", "a out"]


def test_an_alone_test_waits_for_the_room_and_holds_later_tests_back(tmp_path: Path) -> None:
    log: list[str] = []
    ordinary = _start(tmp_path, "ordinary", False, 0.3, log)
    time.sleep(0.05)
    solo = _start(tmp_path, "alone", True, 0.2, log)
    time.sleep(0.05)
    # Arrives while the alone test waits: the turnstile keeps it out until that ends.
    later = _start(tmp_path, "later", False, 0.01, log)
    for thread in (ordinary, solo, later):
        thread.join(5)
    assert log == ["ordinary in", "ordinary out", "alone in", "alone out", "later in", "later out"]
