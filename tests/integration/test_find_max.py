"""``latdoc load --find-max``: the most streams that meet an SLO's quantiles, found by
doubling then bisecting, each level judged by its quantile's interval; against a lab
that serves 4 requests at once and queues the rest, the answer is 4."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import LabFactory
from latdoc.cli import main
from latdoc.lab.sim import LabConfig, LatencyModel
from latdoc.store import Store

MODEL = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)


def test_the_search_finds_the_labs_four_slots(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A request takes ~52 ms and holds a slot throughout: at 5 streams one in five waits
    for a slot, and the p90 of the time to first token leaves 35 ms far behind."""
    db = tmp_path / "fm.db"
    with lab(LabConfig(latency=MODEL, slots=4)) as server:
        code = main(["load", server.base_url, "-m", "lab-sim", "--find-max", "--slo",
                     "ttft_p90=35ms", "--duration-per-level", "1.5", "--max-tokens", "16",
                     "--max-requests", "5000", "--db", str(db)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    with Store(db) as store:
        (info,) = store.list_runs()
    found = info.meta["find_max"]
    assert abs(found["best_streams"] - 4) <= 1, found
    assert found["first_failed_streams"] == found["best_streams"] + 1
    assert found["broke"] == "queueing"
    tried = [p["streams"] for p in found["probes"]]
    assert tried[:3] == [1, 2, 4] and len(tried) <= 7
    assert "The most load that meets the SLO" in out


def test_by_rate_the_search_brackets_the_highest_rate_within_a_tenth(
    lab: LabFactory, tmp_path: Path
) -> None:
    """Poisson arrivals into 4 slots of ~52 ms: past ~77/s the lab cannot keep up at all,
    and well before it a request often finds every slot busy."""
    db = tmp_path / "fm.db"
    with lab(LabConfig(latency=MODEL, slots=4)) as server:
        code = main(["load", server.base_url, "-m", "lab-sim", "--find-max", "--rate", "10",
                     "--slo", "ttft_p90=60ms", "--duration-per-level", "1.5",
                     "--max-tokens", "16", "--max-requests", "5000", "--db", str(db)])  # fmt: skip
    assert code == 0
    with Store(db) as store:
        (info,) = store.list_runs()
    found = info.meta["find_max"]
    assert found["by"] == "rate" and found["best_streams"] is None
    best, failed = found["best_rate"], found["first_failed_rate"]
    assert 10 <= best < failed <= best * 1.1 + 0.01, found
    assert failed <= 80
    rates = [p["streams"] for p in found["probes"]]
    assert rates[:2] == [10, 20]
