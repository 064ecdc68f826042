"""The local Ray cluster starts again, once, when a node missed Ray's own startup wait,
and not when it failed for another reason: its start, without starting Ray."""

from __future__ import annotations

import pytest

from latdoc.errors import LabError
from latdoc.lab.raycluster import STARTUP_TIMED_OUT, STARTUP_TRIES, LocalRayCluster


class _Cluster(LocalRayCluster):
    """A cluster whose every start fails with the next of ``failures`` (then succeeds),
    counting starts and stops."""

    def __init__(self, failures: list[str]) -> None:
        super().__init__(ray="ray")
        self.failures, self.starts, self.stops = failures, 0, 0

    def _start_once(self) -> None:
        self.starts += 1
        if self.failures:
            raise LabError(self.failures.pop(0))

    def stop(self) -> None:
        self.stops += 1


def test_a_node_that_missed_rays_startup_wait_is_started_again() -> None:
    cluster = _Cluster([f"a Ray node exited with code 1: the current node {STARTUP_TIMED_OUT}"])
    cluster.start()
    assert (cluster.starts, cluster.stops) == (2, 1)


def test_it_gives_up_after_its_tries_and_on_any_other_failure() -> None:
    timed_out = f"a Ray node exited with code 1: {STARTUP_TIMED_OUT}"
    cluster = _Cluster([timed_out] * STARTUP_TRIES)
    with pytest.raises(LabError, match=STARTUP_TIMED_OUT):
        cluster.start()
    assert cluster.starts == STARTUP_TRIES
    other = _Cluster(["a Ray node exited with code 1: port in use"])
    with pytest.raises(LabError, match="port in use"):
        other.start()
    assert (other.starts, other.stops) == (1, 1)
