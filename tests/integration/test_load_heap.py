"""What a load keeps stays out of the collector's full passes while it runs, and is
handed back when it ends."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from latdoc.features.load.run import load_endpoint
from latdoc.features.load.send.heap import FREEZE_EVERY_S
from latdoc.features.load.send.sweep import LoadPlan
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.probe import Endpoint
from latdoc.records import Sample
from latdoc.store import Store


def test_a_load_freezes_what_it_keeps_while_it_runs_and_hands_it_back(tmp_path: Path) -> None:
    frozen: list[int] = []
    seen_after_s: list[float] = []

    def sample_seen(_: Sample) -> None:
        frozen.append(gc.get_freeze_count())
        seen_after_s.append(time.monotonic() - began)

    latency = LatencyModel(prefill_base_ms=5, prefill_ms_per_token=0, decode_ms_per_token=5)
    with LabProcess(LabConfig(latency=latency)) as lab, Store(tmp_path / "l.db") as store:
        plan = LoadPlan(
            Endpoint(lab.base_url, "lab-sim"),
            concurrency=(4,),
            duration_per_level=1.5,
            max_tokens=8,
            max_seconds=30,
        )
        began = time.monotonic()
        run = load_endpoint(plan, store=store, on_sample=sample_seen)
    assert run.status == "done" and len(frozen) == len(run.samples) >= 2
    # A request that ended before the first freeze could be due finds nothing frozen
    # (on a quiet machine the first few do; on a busy one the first may end later).
    early = [f for f, at in zip(frozen, seen_after_s, strict=True) if at < FREEZE_EVERY_S]
    assert all(f == 0 for f in early), (frozen, seen_after_s)
    # The level runs six freezes long: its last requests find their elders frozen.
    assert frozen[-1] > 0, frozen
    assert gc.get_freeze_count() == 0
