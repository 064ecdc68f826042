"""Every place a server tells its own timing, read into the one record of who spent what:
vLLM's per-request ``metrics``, Groq's usage timing, LiteLLM's overhead header and the
upstream ``Server-Timing`` it passes on, beside llama.cpp's ``timings`` and
``Server-Timing``. Hand-made traces pin each mapping; the simulated endpoint, telling
its timing in each form in turn, checks that a probe reads each into the record."""

from __future__ import annotations

import asyncio
import math

import pytest

from latdoc import (
    Endpoint,
    ProbeSession,
    RequestTrace,
)
from latdoc.analysis.servertime import server_timing_of, split_ttft
from latdoc.lab.sim import LabConfig, LabServer, LatencyModel, TimingForm
from machine_noise import MachineNoise

LATENCY = LatencyModel(prefill_base_ms=40.0, prefill_ms_per_token=0.0, decode_ms_per_token=3.0)


TOKENS = 12


async def _two_at_once(url: str, model: str) -> list[RequestTrace]:
    async def one() -> RequestTrace:
        async with ProbeSession(Endpoint(url, model)) as session:
            return await session.request("hello", TOKENS)

    return list(await asyncio.gather(one(), one()))


@pytest.mark.parametrize(
    ("form", "source"),
    [
        (TimingForm.LLAMACPP, "llama.cpp timings"),
        (TimingForm.VLLM, "vLLM metrics"),
        (TimingForm.GROQ, "Groq usage timing"),
        (TimingForm.SERVER_TIMING, "Server-Timing"),
    ],
)
def test_a_probe_reads_each_form_the_lab_tells(form: TimingForm, source: str) -> None:
    config = LabConfig(latency=LATENCY, slots=1, answer_tokens=TOKENS, timing_forms=(form,))
    with LabServer(config) as lab:
        traces = asyncio.run(_two_at_once(lab.base_url, config.model))
    told = [server_timing_of(t) for t in traces]
    assert all(t is not None and t.source == source for t in told), told
    timings = [t for t in told if t is not None]
    for timing in timings:
        assert timing.prefill_ms == pytest.approx(LATENCY.prefill_base_ms, abs=0.01)
        assert timing.decode_ms == pytest.approx(
            (TOKENS - 1) * LATENCY.decode_ms_per_token, abs=0.5
        )
    if form is not TimingForm.LLAMACPP:  # llama.cpp does not tell its queue
        # One slot, two requests: the second waits for the whole of the first, as long as
        # the first took here (a busy machine stretches the lab's planned time, never
        # shortens it). The client timed the first too, to the moment it read the end,
        # which a busy client reads late: the told wait lies between the plan and that.
        whole = LATENCY.prefill_base_ms + (TOKENS - 1) * LATENCY.decode_ms_per_token
        queues = sorted(t.queue_ms or 0.0 for t in timings)
        noise = MachineNoise()
        assert queues[0] < noise.bound_ms(5.0, whole / 2)
        assert queues[1] >= 0.85 * whole, queues
        held = min(t.total_ms or math.inf for t in traces)
        assert queues[1] <= held + noise.bound_ms(0.15 * whole, whole / 2), (queues, held)
    # Split by the client's clock, the told prefill is the first token's server part.
    for trace in traces:
        split = split_ttft(trace)
        assert split is not None and split.prefill_ms == pytest.approx(
            LATENCY.prefill_base_ms, abs=0.01
        )


def test_a_lab_that_tells_nothing_leaves_no_server_record() -> None:
    config = LabConfig(latency=LATENCY, timing_forms=())
    with LabServer(config) as lab:
        traces = asyncio.run(_two_at_once(lab.base_url, config.model))
    assert [server_timing_of(t) for t in traces] == [None, None]
    assert all(t.ok for t in traces)
