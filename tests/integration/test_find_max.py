"""``latdoc load --find-max``: the most streams that meet an SLO's quantiles, found by
doubling then bisecting, each level judged by its quantile's interval; against a lab
that serves 4 requests at once and queues the rest, the answer is 4."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from latdoc.cli import main
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.store import Store
from machine_noise import MachineNoise

MODEL = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)


def test_the_search_finds_the_labs_four_slots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], machine_noise: MachineNoise
) -> None:
    """A request takes ~52 ms and holds a slot throughout: at 5 streams one in five waits
    for a slot, and the p90 of the time to first token leaves 35 ms far behind. Rounds
    of 0.7 s: a p90's interval needs 36 values, which one stream (13 a round) has in
    its third round, two in their second and four or more in their first, so on a quiet
    machine every level is decided by its interval, none judged by its point. The lab
    runs in a process of its own: beside a CPU hog, in the load's process, its slots
    stretched until two streams missed the SLO. The SLO allows the prefill 15 ms on a
    quiet machine, widened by the machine's noise (beside the hog and two busy workers,
    three streams' p90 passed 35 ms), never past 50 ms: a fifth stream's slot wait puts
    its p90 near 72."""
    db = tmp_path / "fm.db"
    slo = machine_noise.bound_ms(35.0, 50.0)
    with LabProcess(LabConfig(latency=MODEL, slots=4)) as server:
        code = main(["load", server.base_url, "-m", "lab-sim", "--find-max", "--slo",
                     f"ttft_p90={slo:.0f}ms", "--duration-per-level", "0.7", "--max-tokens",
                     "16", "--max-requests", "5000", "--db", str(db)])  # fmt: skip
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


def test_by_rate_the_search_brackets_the_highest_rate_within_a_tenth(tmp_path: Path) -> None:
    """Poisson arrivals into 4 slots of ~52 ms: past ~77/s the lab cannot keep up at all,
    and well before it a request often finds every slot busy. From 20/s, in rounds of
    1 s: a p90's interval needs 36 values, which 20/s has in its second round and 40/s
    or more in their first (10/s would have 30 after its three, and be judged by its
    point). The lab runs in a process of its own: in the load's process, a busy machine
    stretched its slots until 20/s missed the SLO (TTFT p95 131 ms against a p50 of 23)."""
    db = tmp_path / "fm.db"
    with LabProcess(LabConfig(latency=MODEL, slots=4)) as server:
        code = main(["load", server.base_url, "-m", "lab-sim", "--find-max", "--rate", "20",
                     "--slo", "ttft_p90=60ms", "--duration-per-level", "1",
                     "--max-tokens", "16", "--max-requests", "5000", "--db", str(db)])  # fmt: skip
    assert code == 0
    with Store(db) as store:
        (info,) = store.list_runs()
    found = info.meta["find_max"]
    assert found["by"] == "rate" and found["best_streams"] is None
    best, failed = found["best_rate"], found["first_failed_rate"]
    assert 20 <= best < failed <= best * 1.1 + 0.01, found
    assert failed <= 80
    rates = [p["streams"] for p in found["probes"]]
    assert rates[:2] == [20, 40]


def test_the_page_leads_with_the_answer_and_draws_the_slos_limit(tmp_path: Path) -> None:
    """Six slots, a request of ~170 ms: at 7 streams one request in seven waits a whole
    answer for a slot, so the TTFT p95 leaves 120 ms far behind while its median stays at
    the prefill. The page's heading is the search's answer, its plot draws the limit,
    and its knee sentence says where the p95 queued rather than "no knee". A p95's
    interval needs 72 values, more than any level sends in its three rounds, so every
    level is judged by its point: rounds of 0.25 s send two requests a stream (the
    second at ~170 ms), and a stream past the slots waits a whole answer in each."""
    db, page = tmp_path / "fm.db", tmp_path / "fm.html"
    latency = LatencyModel(prefill_base_ms=20.0, prefill_ms_per_token=0.0,
                           decode_ms_per_token=10.0)  # fmt: skip
    with LabProcess(LabConfig(latency=latency, slots=6, seed=3)) as server:
        code = main(["load", server.base_url, "-m", "lab-sim", "--find-max", "--slo",
                     "ttft_p95=120ms", "--duration-per-level", "0.25", "--max-tokens", "16",
                     "--max-requests", "2000", "--db", str(db), "--html", str(page)])  # fmt: skip
    assert code == 0
    html = page.read_text(encoding="utf-8")
    first = re.search(r"<h1>(.*?)</h1>", html)
    assert first is not None
    assert first[1] == "The most load that meets the SLO (ttft_p95 ≤ 120 ms): 6 streams"
    assert 'id="load-slo-0"' in html and 'id="load-slo-best"' in html
    assert "against the SLO ttft_p95 ≤ 120 ms, met up to 6" in html
    assert "No knee:" not in html
