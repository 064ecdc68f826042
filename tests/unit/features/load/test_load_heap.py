"""What a load keeps stays out of the collector's full passes while it runs, and is
handed back when it ends."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from latdoc.features.load.send.heap import kept_out_of_collection


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
