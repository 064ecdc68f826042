"""The server's own timing: read from each source, split from the client's, used by the verdict.

Hand-made traces pin the arithmetic; the simulated endpoint (which tells its queue
and prefill in ``Server-Timing``) checks that a queue on one slot comes out as
queueing, told by the server, not as prefill.
"""

from __future__ import annotations

import asyncio

import pytest

from latdoc import (
    Endpoint,
    Kind,
    ProbeSession,
    RequestTrace,
    Sample,
    Step,
    build_diagnosis,
)
from latdoc.analysis.servertime import DISAGREE_FRACTION, DISAGREE_MS
from latdoc.lab.sim import LabConfig, LabServer, LatencyModel
from machine_noise import held_back
from unit.analysis.test_server_timing import CONTEXT


def test_a_queue_on_one_slot_is_queueing_by_the_servers_own_account() -> None:
    latency = LatencyModel(prefill_base_ms=60.0, prefill_ms_per_token=0.0, decode_ms_per_token=8.0)
    config = LabConfig(latency=latency, slots=1)

    async def together(url: str, n: int) -> list[RequestTrace]:
        async def one() -> RequestTrace:
            async with ProbeSession(Endpoint(url, config.model)) as session:
                return await session.request("hello", 12)

        return list(await asyncio.gather(*(one() for _ in range(n))))

    with LabServer(config) as lab:
        # The client and the lab's thread share this process: what it waited for a core
        # while the requests ran is how late either side's marks can be.
        with held_back() as held:
            alone = [asyncio.run(together(lab.base_url, 1))[0] for _ in range(3)]
            crowd = asyncio.run(together(lab.base_url, 4))
        held_ms = held.wait_ms
    samples = [Sample(Step.LOAD, t, index=i) for i, t in enumerate(alone)]
    samples += [Sample(Step.LOAD, t, concurrency=4, index=10 + i) for i, t in enumerate(crowd)]
    d = build_diagnosis(samples, CONTEXT)
    (queueing,) = [f for f in d.findings if f.kind is Kind.QUEUEING]
    assert Kind.INPUT_LENGTH not in {f.kind for f in d.findings}
    ev = queueing.evidence
    assert ev["server_concurrent_prefill_ms"] == pytest.approx(60.0, rel=0.05)
    assert ev["server_alone_wait_ms"] < 10.0
    # Four at once on one slot: the median request waits for one or two ahead of it.
    assert ev["server_concurrent_wait_ms"] > 100.0
    assert "queueing, not prefill" in queueing.rule
    assert d.server is not None and d.server.source == "Server-Timing"
    # The two accounts agree within the product's resolution, plus what this machine held
    # the process back while the requests ran (0 on a quiet machine).
    resolution_ms = max(DISAGREE_MS, DISAGREE_FRACTION * 60.0)
    for disagreement in d.server.disagreements:
        assert disagreement.worst_ms <= resolution_ms + held_ms, (disagreement, held_ms)
