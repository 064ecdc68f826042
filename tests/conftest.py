"""Shared fixtures: the simulated endpoint on loopback, started per test on port 0."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest

from latdoc.lab.sim import LabConfig, LabServer, LatencyModel

FAST = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.01, decode_ms_per_token=1.0)
"""A quick endpoint for tests that check behaviour, not timing."""

LabFactory = Callable[..., AbstractContextManager[LabServer]]


@pytest.fixture(autouse=True)
def private_store(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test (and every command it starts) keeps its runs in a store of its own,
    never in the user's."""
    monkeypatch.setenv("LATDOC_DB", str(tmp_path_factory.mktemp("store") / "latdoc.db"))


@pytest.fixture
def lab() -> LabFactory:
    """``with lab(config, tls=..., http2=...) as server:`` a real server on loopback."""

    @contextmanager
    def start(
        config: LabConfig | None = None, *, tls: bool = False, http2: bool = False
    ) -> Iterator[LabServer]:
        with LabServer(config or LabConfig(latency=FAST), tls=tls, http2=http2) as server:
            yield server

    return start
