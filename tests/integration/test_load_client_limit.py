"""A load measures its own limit: the CPU, loop lag and kernel-stamp reader lag of the
process that sent each level, and says when the client, not the server, shaped it."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from latdoc.analysis.policy import CLIENT_CPU_TARGET
from latdoc.cli import EXIT_OK, main
from latdoc.features.load.analysis import ClientLoad, processes_for
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.store import Store


def test_each_level_says_what_sending_it_cost_and_whether_the_client_shaped_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2 streams cost this process little; 256 streams of 32 tokens at 5 ms from one
    process cost it more, and where that passes the policy the report says the client
    shaped the level, with the processes that would spread it. The store keeps it."""
    latency = LatencyModel(prefill_base_ms=5, prefill_ms_per_token=0, decode_ms_per_token=5)
    db = tmp_path / "load.db"
    with LabProcess(LabConfig(latency=latency)) as lab:
        code = main(["load", lab.base_url, "-m", "lab-sim", "--concurrency", "2,256",
                     "--duration-per-level", "2", "--max-tokens", "32", "--json",
                     "--max-requests", "20000", "--db", str(db)])  # fmt: skip
    assert code == EXIT_OK
    document = json.loads(capsys.readouterr().out)
    low, high = (level["window"]["client"] for level in document["levels"])
    for load in (low, high):
        assert 0 < load["cpu_share"] < 2 and load["processes"] == 1
        assert 0 <= load["read_together"] <= 1
        assert load["loop_lag_ms_p99"] is not None and load["loop_lag_ms_p99"] >= 0
        assert load["reader_lag_ms_p99"] is not None and load["reader_lag_ms_p99"] >= 0
    assert high["cpu_share"] > 2 * low["cpu_share"], (low, high)
    findings = " ".join(document["findings"])
    for label, load in (("2", low), ("256", high)):
        shaped = ClientLoad.from_document(load)
        assert shaped is not None
        said = f"At {label} the client, not the server, shaped the numbers" in findings
        assert said == shaped.saturated, (label, load, findings)
        if said:
            assert f"--processes {processes_for(shaped)}" in findings
            assert f"{shaped.read_together:.1%} of its gaps between tokens were read" in findings
    # Rendered again from the store: the same figures.
    assert main(["report", document["run_id"], "--json", "--db", str(db)]) == EXIT_OK
    again = json.loads(capsys.readouterr().out)
    assert [lv["window"]["client"] for lv in again["levels"]] == [low, high]


@pytest.mark.parametrize("streams", [2, 256])
def test_processes_auto_sizes_the_sweep_from_a_calibration_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], streams: int
) -> None:
    """The calibration's CPU share, scaled to the peak's streams and sized at the
    policy's share of a core, gives the processes (at most the machine's cores); more
    than one sends from worker processes, one from this process. A small peak needs one."""
    latency = LatencyModel(prefill_base_ms=5, prefill_ms_per_token=0, decode_ms_per_token=5)
    db = tmp_path / "load.db"
    with LabProcess(LabConfig(latency=latency)) as lab:
        code = main(["load", lab.base_url, "-m", "lab-sim", "--concurrency", str(streams),
                     "--processes", "auto", "--duration-per-level", "1", "--max-tokens", "16",
                     "--max-requests", "20000", "--json", "--db", str(db)])  # fmt: skip
    assert code == EXIT_OK
    document = json.loads(capsys.readouterr().out)
    with Store(db) as store:
        (info,) = store.list_runs()
    chosen = info.meta["processes_auto"]
    calibration = chosen["calibration"]
    assert calibration["streams"] == min(streams, 32) and calibration["requests"] > 0
    share = calibration["client"]["cpu_share"] * streams / calibration["streams"]
    assert chosen["peak_cpu_share"] == pytest.approx(share)
    expected = min(os.cpu_count() or 1, max(1, math.ceil(share / CLIENT_CPU_TARGET)))
    assert chosen["processes"] == expected
    if streams == 2:
        assert expected == 1
    sent_from = info.meta.get("workers")
    assert (sent_from is None) == (expected == 1)
    if sent_from is not None:
        assert sent_from["count"] == expected
    # Sent from workers or not, the level says what it cost the busiest process.
    (level,) = document["levels"]
    client = level["window"]["client"]
    assert client is not None, (level["window"], document["notes"])
    assert client["processes"] == expected and client["loop_lag_ms_p99"] is not None
    assert any(n.startswith(f"--processes auto chose {expected}")
               for n in document["notes"])  # fmt: skip
