"""What a load keeps stays out of the collector's full passes while it runs, and is
handed back when it ends."""

from __future__ import annotations

import gc
from pathlib import Path

from latdoc.features.load.run import load_endpoint
from latdoc.features.load.send.sweep import LoadPlan
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.probe import Endpoint
from latdoc.records import Sample
from latdoc.store import Store


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
