"""What a load keeps stays out of the collector's full passes while it runs, and is
handed back when it ends."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from latdoc.features.load.run import load_endpoint
from latdoc.features.load.send.heap import kept_out_of_collection
from latdoc.features.load.send.sweep import LoadPlan
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.probe import Endpoint
from latdoc.records import Sample
from latdoc.store import Store


class Node:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def _nothing_frozen() -> Iterator[None]:
    gc.collect()
    assert gc.get_freeze_count() == 0
    yield
    gc.unfreeze()


def test_what_lived_a_while_is_frozen_in_the_block_and_handed_back_after() -> None:
    seen: dict[str, object] = {}

    async def go() -> None:
        async with kept_out_of_collection(every_s=0.05):
            cycle = Node()
            gone = weakref.ref(cycle)
            await asyncio.sleep(0.2)
            seen["frozen in the block"] = gc.get_freeze_count()
            del cycle
            # Frozen: a full pass does not free the cycle that died meanwhile.
            gc.collect()
            seen["alive after a pass in the block"] = gone() is not None
        seen["frozen after"] = gc.get_freeze_count()
        gc.collect()
        seen["alive after a pass after"] = gone() is not None

    asyncio.run(go())
    assert seen["frozen in the block"] > 0  # type: ignore[operator]
    assert seen["alive after a pass in the block"] is True
    assert seen["frozen after"] == 0
    assert seen["alive after a pass after"] is False


def test_a_process_that_froze_objects_itself_is_left_as_it_is() -> None:
    gc.freeze()
    before = gc.get_freeze_count()
    assert before > 0

    async def go() -> int:
        async with kept_out_of_collection(every_s=0.01):
            Node()
            [Node() for _ in range(1000)]
            await asyncio.sleep(0.1)
            return gc.get_freeze_count()

    assert asyncio.run(go()) == before
    assert gc.get_freeze_count() == before


def test_a_collector_turned_off_is_left_off_and_nothing_frozen() -> None:
    async def go() -> int:
        async with kept_out_of_collection(every_s=0.01):
            await asyncio.sleep(0.1)
            return gc.get_freeze_count()

    gc.disable()
    try:
        assert asyncio.run(go()) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_load_freezes_what_it_keeps_while_it_runs_and_hands_it_back(tmp_path: Path) -> None:
    frozen: list[int] = []

    def sample_seen(_: Sample) -> None:
        frozen.append(gc.get_freeze_count())

    latency = LatencyModel(prefill_base_ms=5, prefill_ms_per_token=0, decode_ms_per_token=5)
    with LabProcess(LabConfig(latency=latency)) as lab, Store(tmp_path / "l.db") as store:
        plan = LoadPlan(
            Endpoint(lab.base_url, "lab-sim"),
            concurrency=(4,),
            duration_per_level=1.5,
            max_tokens=8,
            max_seconds=30,
        )
        run = load_endpoint(plan, store=store, on_sample=sample_seen)
    assert run.status == "done" and len(frozen) == len(run.samples) > 20
    # The first requests end before the first freeze; later ones find their elders frozen.
    assert frozen[0] == 0 and frozen[-1] > 0, frozen
    assert gc.get_freeze_count() == 0
