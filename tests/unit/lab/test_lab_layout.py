"""The lab's shape: each room's public names, a cheap import, and how services stop.

Every lab service (the simulated server, its child process, the engine, the
network) starts and stops through :class:`latdoc.lab._service.Service`; here a
real :class:`LabServer` shows the contract, and a service that cannot stop shows
which error wins.
"""

from __future__ import annotations

import importlib

import pytest

import latdoc.lab
from latdoc import LabError
from latdoc.lab._service import Service

ROOMS = [
    "latdoc.lab",
    "latdoc.lab.sim",
    "latdoc.lab.net",
    "latdoc.lab.engine",
    "latdoc.lab.command",
]


def _ruff_order(name: str) -> tuple[int, str]:
    """Ruff's order for ``__all__`` (RUF022): CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2), name


@pytest.mark.parametrize("name", ROOMS)
def test_all_is_sorted_and_resolvable(name: str) -> None:
    room = importlib.import_module(name)
    assert room.__all__ == sorted(room.__all__, key=_ruff_order)
    for public in room.__all__:
        assert getattr(room, public) is not None, public


def test_the_lab_face_names_what_latdoc_uses() -> None:
    needed = {"LabConfig", "LatencyModel", "Fault", "LabServer", "LabProcess", "DEMO_CONFIG"}
    needed |= {"EngineServer", "engine_available", "LabNet"}
    assert needed <= set(latdoc.lab.__all__)


class _Stuck(Service):
    """A service whose start or stop fails as told, recording its calls."""

    def __init__(self, *, start_fails: bool = False) -> None:
        self.start_fails = start_fails
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")
        if self.start_fails:
            raise LabError("cannot start")

    def stop(self) -> None:
        self.calls.append("stop")
        raise LabError("cannot stop")


def test_a_failed_start_is_stopped_and_its_error_wins() -> None:
    service = _Stuck(start_fails=True)
    with pytest.raises(LabError, match="cannot start") as raised, service:
        pytest.fail("the block runs only after a start")
    assert service.calls == ["start", "stop"]
    assert raised.value.__notes__ == ["and _Stuck did not stop cleanly: cannot stop"]


def test_an_error_in_the_block_wins_over_one_in_stopping() -> None:
    service = _Stuck()
    with pytest.raises(KeyError) as raised, service:
        raise KeyError("body")
    assert service.calls == ["start", "stop"]
    assert raised.value.__notes__ == ["and _Stuck did not stop cleanly: cannot stop"]
    with pytest.raises(LabError, match="cannot stop"), _Stuck():
        pass
