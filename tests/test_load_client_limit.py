"""A load measures its own limit: the CPU, loop lag and kernel-stamp reader lag of the
process that sent each level, and says when the client, not the server, shaped it."""

from __future__ import annotations

import asyncio
import json
import math
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from latdoc.analysis.policy import CLIENT_CPU_SHARE, CLIENT_CPU_TARGET, CLIENT_LAG_MS
from latdoc.cli import EXIT_OK, main
from latdoc.features.load.analysis import ClientLoad, busiest, processes_for
from latdoc.features.load.send.meter import ClientMeter
from latdoc.lab.sim import LabConfig, LabProcess, LatencyModel
from latdoc.records import Chunk, RequestTrace
from latdoc.store import Store


def test_a_level_is_the_clients_when_its_cpu_or_lags_pass_the_policy() -> None:
    calm = ClientLoad(CLIENT_CPU_TARGET / 2, CLIENT_LAG_MS / 2, CLIENT_LAG_MS / 2)
    assert not calm.saturated and calm.reasons() == []
    assert processes_for(calm) == 1
    near = ClientLoad(CLIENT_CPU_SHARE - 0.01, None, None)
    assert not near.saturated and processes_for(near) == math.ceil(
        near.cpu_share / CLIENT_CPU_TARGET
    )
    busy = ClientLoad(CLIENT_CPU_SHARE, None, None)
    assert busy.reasons() == [f"the process used {CLIENT_CPU_SHARE:.0%} of a core"]
    # A saturated share is a floor on the need: at least one more process.
    assert processes_for(busy) == 2
    late = ClientLoad(0.3, CLIENT_LAG_MS + 5, None)
    assert late.saturated and "event loop ran" in late.reasons()[0]
    reader = ClientLoad(0.3, 1.0, CLIENT_LAG_MS + 1)
    assert reader.saturated and "kernel-stamp reader" in reader.reasons()[0]
    # Two workers each at 0.5 of a core hold at one target's worth each.
    pair = ClientLoad(0.5, 1.0, 1.0, processes=2)
    assert processes_for(pair) == math.ceil(2 * 0.5 / CLIENT_CPU_TARGET)
    merged = busiest([calm, None, late], processes=3)
    assert merged == ClientLoad(calm.cpu_share, late.loop_lag_ms_p99, calm.reader_lag_ms_p99, 3)
    assert busiest([None]) is None
    assert ClientLoad.from_document(merged.document()) == merged
    # Tokens read together are shown, never a reason on their own: a server may write
    # several at once.
    together = ClientLoad(0.3, 1.0, 1.0, read_together=0.4)
    assert not together.saturated
    assert busiest([together, calm]) == ClientLoad(
        calm.cpu_share, calm.loop_lag_ms_p99, calm.reader_lag_ms_p99, 1, 0.4
    )
    assert ClientLoad.from_document(together.document()) == together
    assert ClientLoad.from_document({"cpu_share": "x"}) is None


def _trace(*stamps_ms: int) -> RequestTrace:
    chunks = tuple(Chunk(t_ns=ms * 1_000_000, chars=3, tokens=1) for ms in stamps_ms)
    return RequestTrace(datetime.now(UTC), 0, "http://x/v1/chat/completions", "m", "chat",
                        chunks=chunks)  # fmt: skip


def test_the_meter_counts_the_gaps_whose_tokens_were_read_together() -> None:
    async def level() -> ClientLoad:
        meter = ClientMeter()
        meter.start()
        meter.observe(_trace(0, 20, 20, 40))  # the third token came in the second's read
        meter.observe(_trace(5, 25))
        meter.observe(_trace(7))  # one token: no gap
        return meter.end()

    load = asyncio.run(level())
    assert load.read_together == pytest.approx(1 / 4)
    # A level that measured no gap has no share to show.
    empty = ClientMeter()

    async def nothing() -> ClientLoad:
        empty.start()
        return empty.end()

    assert asyncio.run(nothing()).read_together is None


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
    assert client["processes"] == expected and client["loop_lag_ms_p99"] is not None
    assert any(n.startswith(f"--processes auto chose {expected}")
               for n in document["notes"])  # fmt: skip
