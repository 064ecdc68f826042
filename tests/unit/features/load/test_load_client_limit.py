"""A load measures its own limit: the CPU, loop lag and kernel-stamp reader lag of the
process that sent each level, and says when the client, not the server, shaped it."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime

import pytest

from latdoc.analysis.policy import CLIENT_CPU_SHARE, CLIENT_CPU_TARGET, CLIENT_LAG_MS
from latdoc.features.load.analysis import ClientLoad, busiest, processes_for
from latdoc.features.load.send.meter import ClientMeter
from latdoc.records import Chunk, RequestTrace


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
