"""``latdoc load --processes N``: one sweep sent from worker processes, merged into one run.

The lab runs in a process of its own with 8 slots; a request takes about
20 ms + 15 × 10 ms. The workers are real spawned processes sending over loopback.
"""

from __future__ import annotations

import pytest

from latdoc import (
    Endpoint,
    LoadPlan,
    UsageError,
)
from latdoc.features.load.send.workers import split, worker_plans

OUTPUT = 16


def _plan(base_url: str, **options: object) -> LoadPlan:
    defaults: dict[str, object] = {
        "max_tokens": OUTPUT,
        "duration_per_level": 1.5,
        "max_seconds": 60.0,
        "seed": 11,
    }
    return LoadPlan(Endpoint(base_url, "lab-sim"), **{**defaults, **options})  # type: ignore[arg-type]


def test_budgets_split_over_workers_and_never_overrun() -> None:
    plan = _plan("http://127.0.0.1:1/v1", concurrency=(3,), max_requests=7, token_budget=1001)
    shares = worker_plans(plan, 3)
    assert [p.max_requests for p in shares] == [3, 2, 2]
    assert [p.token_budget for p in shares] == [334, 334, 333]
    assert split(5, 2) == [3, 2] and split(1, 3) == [1, 0, 0]
    with pytest.raises(UsageError, match="cannot be split over 8 workers"):
        worker_plans(plan, 8)


def test_workers_are_ray_actors_local_processes_or_none() -> None:
    from latdoc.features.load import DEFAULT_RAY_WORKERS, Workers

    assert Workers.asked() is None
    assert Workers.asked(processes=3) == Workers(3)
    assert Workers.asked(ray="auto") == Workers(DEFAULT_RAY_WORKERS, ray="auto")
    assert Workers.asked(ray="10.0.0.1:6379", actors=4) == Workers(4, ray="10.0.0.1:6379")
    with pytest.raises(UsageError, match="--workers counts Ray actors: give --ray ADDRESS too"):
        Workers.asked(processes=2, actors=4)
