"""Quirks of real endpoints, played by the lab and read by the real probe and diagnosis.

Several tokens per streamed event (fixed or an irregular seeded draw), SSE keep-alive
comments while a request waits for its slot, decode that slows with
the streams in flight (continuous batching), and a rare error rate: each must reach
the client as the knob says, and a healthy endpoint with a healthy quirk must still
be named healthy. The lab runs in a :class:`LabProcess`, so client and server do not
share an interpreter lock.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import statistics
import time
from typing import Any

import httpx
import pytest

from latdoc import (
    ConnectionOptions,
    Diagnosis,
    DiagnosisPlan,
    Endpoint,
    Kind,
    ProbeSession,
    RequestTrace,
    RunContext,
    build_diagnosis,
    measure_steps,
)
from latdoc.analysis.kinds.decode import token_tpot_ms
from latdoc.analysis.kinds.queueing import MIN_SWING_N, QUEUE_CV, QUEUE_P95_P50
from latdoc.analysis.signals import find_stalls
from latdoc.lab.sim import Fault, LabConfig, LabProcess, LabServer, LatencyModel, output_token
from latdoc.probe import SSEDecoder
from machine_noise import WIDEN, HeldBack, MachineNoise, held_back, run_delay_ms

MODEL = LabConfig().model


LabTruth = dict[str, Any]


async def _probe(
    session: ProbeSession, max_tokens: int, texts: list[str] | None = None
) -> tuple[RequestTrace, LabTruth]:
    """One request; ``texts`` gets each content chunk's text, the truth object is kept."""
    truth: LabTruth = {}

    def keep(event: Any, _t_ns: int) -> None:
        if not isinstance(event, dict):
            return
        truth.update(event.get("lab") or {})
        for choice in event.get("choices") or []:
            content = (choice.get("delta") or {}).get("content")
            if content and texts is not None:
                texts.append(content)

    trace = await session.request("Hello, lab", max_tokens, on_event=keep)
    assert trace.error is None, trace.error
    return trace, truth


def test_each_event_carries_its_tokens_at_the_last_ones_decode_time(
    machine_noise: MachineNoise,
) -> None:
    """4 tokens an event at 20 ms a token: 16 tokens come as 4 chunks holding 4 words
    each, 80 ms apart, the first when its fourth token is due (prefill + 3 gaps after
    the headers); the usage counts all 16, and the time per token reads 20 ms, not 80."""
    latency = LatencyModel(prefill_base_ms=30.0, prefill_ms_per_token=0.0, decode_ms_per_token=20.0)
    config = LabConfig(latency=latency, tokens_per_event=4)
    texts: list[str] = []

    async def go(base_url: str) -> RequestTrace:
        async with ProbeSession(Endpoint(base_url, MODEL)) as session:
            await session.request("warm up", 1)
            trace, _ = await _probe(session, 16, texts)
            return trace

    with LabProcess(config) as lab:
        trace = asyncio.run(go(lab.base_url))
    assert trace.output_tokens == 16 and trace.output_tokens_exact
    assert len(trace.chunks) == 4
    assert texts == ["".join(output_token(k) for k in range(i, i + 4)) for i in (0, 4, 8, 12)]
    assert [c.chars for c in trace.chunks] == [len(t) for t in texts]
    gaps = trace.itl_ms
    for gap in gaps:
        machine_noise.assert_effect(gap, 80.0, 0.15)
    assert trace.first_token_ns is not None and trace.first_byte_ns is not None
    held = (trace.first_token_ns - trace.first_byte_ns) / 1e6
    machine_noise.assert_effect(held, 30.0 + 3 * 20.0, 0.15)
    tpot = token_tpot_ms(trace)
    assert tpot is not None
    machine_noise.assert_effect(tpot, 20.0, 0.15)
    assert not find_stalls(gaps)


def test_an_irregular_server_draws_each_events_tokens_from_its_seed() -> None:
    """1 to 8 tokens an event, drawn from the seed: the chunks' texts add up to the whole
    answer, their sizes vary within the bounds, and a fresh server with the same seed
    cuts the same answer the same way."""
    config = LabConfig(
        latency=LatencyModel(
            prefill_base_ms=2.0, prefill_ms_per_token=0.0, decode_ms_per_token=1.0
        ),
        tokens_per_event=1,
        tokens_per_event_max=8,
        seed=5,
    )

    def sizes() -> list[int]:
        texts: list[str] = []

        async def go(base_url: str) -> RequestTrace:
            async with ProbeSession(Endpoint(base_url, MODEL)) as session:
                trace, _ = await _probe(session, 60, texts)
                return trace

        with LabServer(config) as lab:
            trace = asyncio.run(go(lab.base_url))
        assert trace.output_tokens == 60
        assert "".join(texts) == "".join(output_token(k) for k in range(60))
        return [text.count(" ") for text in texts]

    first = sizes()
    assert sum(first) == 60
    assert all(1 <= n <= 8 for n in first)
    assert len(set(first)) >= 4
    assert sizes() == first


def test_events_never_mix_reasoning_and_answer() -> None:
    """6 reasoning tokens then 10 of answer, 4 an event: 4 + 2 reasoning, then 4 + 4 + 2
    of answer."""
    latency = LatencyModel(
        prefill_base_ms=2.0, prefill_ms_per_token=0.0, decode_ms_per_token=1.0, reasoning_tokens=6
    )
    config = LabConfig(latency=latency, tokens_per_event=4)
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 10,
        "stream": True,
    }
    with LabServer(config) as lab:
        response = httpx.post(f"{lab.base_url}/chat/completions", json=body, timeout=10)
    deltas = [
        json.loads(line[6:])["choices"][0]["delta"]
        for line in response.text.splitlines()
        if line.startswith("data: {")
    ]
    shown = [
        (key, d[key].count(" "))
        for d in deltas
        for key in ("reasoning_content", "content")
        if d.get(key)
    ]
    assert shown == [
        ("reasoning_content", 4),
        ("reasoning_content", 2),
        ("content", 4),
        ("content", 4),
        ("content", 2),
    ]


def test_keepalive_comments_while_queued_then_the_first_token_when_the_slot_frees(
    machine_noise: MachineNoise,
) -> None:
    """One slot, held 30 + 99·5 = 525 ms by a first request; a second sent once the first
    streams gets its headers at once and a ``: keep-alive`` comment every 20 ms while it
    waits for the slot, none in its 30 ms prefill: its first token comes that prefill
    after the first request's last token. The probe's first byte is then the headers:
    the queue shows between first byte and first token, and the probe's keep-alive wait
    (first byte to the last comment) is the queue, within a comment's interval.

    The second leaves when the client has read the first's first token and opened its
    connection: beside a CPU hog that took up to 211 ms, and a 245 ms stream left it a
    queue of 34 ms. The first's stream of 495 ms leaves a queue of 280 ms or more even
    then, clear of the 180 ms the test reads as queued."""
    every_ms = 20.0
    first_tokens = 100
    latency = LatencyModel(prefill_base_ms=30.0, prefill_ms_per_token=0.0, decode_ms_per_token=5.0)
    config = LabConfig(latency=latency, slots=1, keepalive_comment_ms=every_ms)
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 2,
        "stream": True,
    }

    async def raw_second(
        base_url: str, started: asyncio.Event
    ) -> tuple[float, list[float], float, dict[str, Any]]:
        """Headers, each comment's and the first token's arrival (ms from sending), read
        by the probe's own SSE decoder, and the lab's own account of the request."""
        await started.wait()
        decoder = SSEDecoder()
        comments: list[float] = []
        first_data: float | None = None
        truth: dict[str, Any] = {}
        async with httpx.AsyncClient(timeout=10) as client:
            t0 = time.perf_counter()
            async with client.stream("POST", f"{base_url}/chat/completions", json=body) as r:
                headers_ms = (time.perf_counter() - t0) * 1000
                async for raw in r.aiter_raw():
                    at = (time.perf_counter() - t0) * 1000
                    seen = decoder.comments
                    events = decoder.feed(raw, 0)
                    comments += [at] * (decoder.comments - seen)
                    answered = any('"content":" ' in e.data for e in events)
                    if answered and first_data is None:
                        first_data = at
                    for e in events:
                        if '"lab"' in e.data:
                            truth.update(json.loads(e.data)["lab"])
        assert first_data is not None
        return headers_ms, comments, first_data, truth

    async def go(base_url: str, second_raw: bool) -> tuple[RequestTrace, Any]:
        started = asyncio.Event()
        async with ProbeSession(Endpoint(base_url, MODEL)) as session:
            await session.request("warm up", 1)

            def on_first(event: Any, _t_ns: int) -> None:
                if isinstance(event, dict) and '"content": " ' in json.dumps(event):
                    started.set()

            first = asyncio.create_task(session.request("Hello", first_tokens, on_event=on_first))
            if second_raw:
                second: Any = await raw_second(base_url, started)
            else:
                await started.wait()
                truth: dict[str, Any] = {}

                def keep_truth(event: Any, _t_ns: int) -> None:
                    if isinstance(event, dict) and "lab" in event:
                        truth.update(event["lab"])

                second = (await session.request("Hello", 2, on_event=keep_truth), truth)
            return await first, second

    def held_ms(pid: int | None) -> float:
        """How long the lab's process and this one have waited for a core, in all."""
        assert pid is not None
        return run_delay_ms(pid) + run_delay_ms(os.getpid())

    with LabProcess(config) as lab:
        before = held_ms(lab.pid)
        first, raw = asyncio.run(go(lab.base_url, True))
        headers_ms, comments, first_data_ms, raw_truth = raw
        held_raw = held_ms(lab.pid) - before
        first_again, (probed, probed_truth) = asyncio.run(go(lab.base_url, False))
        held_probed = held_ms(lab.pid) - before - held_raw
    assert first.error is None and first_again.error is None
    # The second queued (by the lab's own account) for a good part of the first's stream
    # of 495 ms, far more than a comment's interval.
    assert raw_truth["queue_ms"] > 180.0 and probed_truth["queue_ms"] > 180.0
    # What the client saw between the headers and the first token is the lab's queue and
    # prefill: within 10 ms, widened by the noise and what the lab and the client waited
    # for a core, never by half the prefill and a comment's interval.
    waited = first_data_ms - headers_ms
    lab_wait = raw_truth["queue_ms"] + raw_truth["prefill_ms"]
    machine_noise.assert_near(waited, lab_wait, 10.0, 25.0, extra_ms=held_raw)
    # The headers come at once: within 15 ms, widened by the noise and what the lab and
    # the client waited for a core meanwhile, never to 150 ms (held back to the slot's
    # freeing, they would come 280 ms or more after the send).
    assert headers_ms < machine_noise.bound_ms(15.0, 150.0, extra_ms=held_raw)
    intervals = [b - a for a, b in zip([headers_ms, *comments], comments, strict=False)]
    machine_noise.assert_effect(statistics.median(intervals), every_ms, 0.2)
    assert abs(len(comments) - (waited - 30.0) / every_ms) <= 2
    # The last comment while queued, none in the prefill after the slot frees.
    machine_noise.assert_near(first_data_ms - comments[-1], 30.0 + every_ms / 2, every_ms, 20.0)

    assert probed.error is None, probed.error
    assert probed.first_byte_ns is not None and probed.first_token_ns is not None
    assert probed.sent_ns is not None and first_again.done_ns is not None
    wait_ms = (probed.first_byte_ns - probed.sent_ns) / 1e6
    queued_ms = (probed.first_token_ns - probed.first_byte_ns) / 1e6
    assert wait_ms < machine_noise.bound_ms(15.0, 150.0, extra_ms=held_probed)
    lab_wait = probed_truth["queue_ms"] + probed_truth["prefill_ms"]
    machine_noise.assert_near(queued_ms, lab_wait, 10.0, 25.0, extra_ms=held_probed)
    assert probed.keepalive_comments is not None and probed.keepalive_comments >= 8
    assert probed.keepalive_wait_ms is not None
    # The last comment came within a comment's interval before the lab's queue ended.
    machine_noise.assert_near(
        probed.keepalive_wait_ms, probed_truth["queue_ms"] - every_ms / 2, 15.0, 25.0
    )
    # The first token comes the prefill after the slot frees (the first request's last
    # token, read by the same client on its own clock).
    freed_ms = (
        first_again.t0_ns + first_again.done_ns - probed.t0_ns - probed.first_token_ns
    ) / 1e6
    machine_noise.assert_near(-freed_ms, 30.0, 10.0, 25.0)


def test_eight_streams_at_once_decode_slower_by_the_batch_factor(
    machine_noise: MachineNoise,
) -> None:
    """``batch_slowdown`` 0.25 at 10 ms a token: one stream alone decodes at 10 ms a
    token, eight at once at 10 × (1 + 0.25 × 7) = 27.5 ms, as the lab's own account
    and the client's reading both say (the client's within 15%, plus the noise: the
    eight start and end a few ms apart, and decode alone for those ms)."""
    slowdown, decode = 0.25, 10.0
    latency = LatencyModel(
        prefill_base_ms=10.0,
        prefill_ms_per_token=0.0,
        decode_ms_per_token=decode,
        batch_slowdown=slowdown,
    )
    tokens = 60

    async def go(base_url: str) -> tuple[list[tuple[RequestTrace, LabTruth]], ...]:
        async with ProbeSession(Endpoint(base_url, MODEL), max_connections=8) as session:
            await asyncio.gather(*(session.request("warm up", 1) for _ in range(8)))
            alone = [await _probe(session, tokens) for _ in range(2)]
            together = await asyncio.gather(*(_probe(session, tokens) for _ in range(8)))
            return alone, list(together)

    with LabProcess(LabConfig(latency=latency)) as lab:
        alone, together = asyncio.run(go(lab.base_url))
    factor = 1 + slowdown * 7
    told_alone = statistics.median(t["decode_ms"] for _, t in alone) / (tokens - 1)
    told_together = statistics.median(t["decode_ms"] for _, t in together) / (tokens - 1)
    assert told_alone == pytest.approx(decode, rel=0.01)
    assert told_together / told_alone == pytest.approx(factor, rel=0.1)
    read_alone = statistics.median(t.tpot_ms or 0.0 for t, _ in alone)
    read_together = statistics.median(t.tpot_ms or 0.0 for t, _ in together)
    machine_noise.assert_effect(read_alone, decode, 0.15)
    machine_noise.assert_effect(read_together, decode * factor, 0.15)


def test_two_percent_of_two_hundred_requests_fail_within_binomial_bounds() -> None:
    """``fault_rate`` 0.02 of 503s: over 200 requests, between 1 and 11 fail (binomial
    n = 200, p = 0.02: P(X = 0) = 1.8%, P(X ≥ 12) < 0.1%), and the same seed fails the
    same requests again."""
    config = LabConfig(
        latency=LatencyModel(
            prefill_base_ms=0.0, prefill_ms_per_token=0.0, decode_ms_per_token=0.0
        ),
        fault=Fault.UNAVAILABLE,
        fault_rate=0.02,
        seed=7,
    )

    def failed() -> list[int]:
        async def go(base_url: str) -> list[RequestTrace]:
            async with ProbeSession(Endpoint(base_url, MODEL)) as session:
                return [await session.request("Hello", 1) for _ in range(200)]

        with LabServer(config) as lab:
            traces = asyncio.run(go(lab.base_url))
        assert all(t.error is None or t.error.code == "http:503" for t in traces)
        return [i for i, t in enumerate(traces) if t.error is not None]

    first = failed()
    assert 1 <= len(first) <= 11, first
    assert failed() == first


HEALTHY = LatencyModel(
    prefill_base_ms=20.0, prefill_ms_per_token=0.01, decode_ms_per_token=15.0, jitter_ms=2.0
)


@dataclasses.dataclass(frozen=True)
class Diagnosed:
    """A run's diagnosis, with what held its client and its lab back while it ran and
    the machine's scheduling noise around it."""

    diagnosis: Diagnosis
    held: HeldBack
    noise_ms: float


def _diagnose(config: LabConfig, *, max_seconds: float = 6.0) -> Diagnosed:
    """A short diagnosis run against ``config``: 32 output tokens, four at once in the
    load step (which a budget under 8 s leaves out)."""
    noise = MachineNoise()
    with LabProcess(config) as lab:
        plan = DiagnosisPlan(
            Endpoint(lab.base_url, config.model),
            ConnectionOptions(),
            max_tokens=32,
            max_seconds=max_seconds,
            seed=11,
            concurrency=4,
        )
        assert lab.pid is not None
        with held_back(lab.pid) as held:
            result = asyncio.run(measure_steps(plan))
        context = RunContext(
            "quirks", lab.base_url, config.model, cpu_count=2, notes=tuple(result.notes)
        )
    return Diagnosed(build_diagnosis(result.samples, context), held, noise.ms())


def _kinds(d: Diagnosis) -> list[Kind]:
    return [f.kind for f in d.findings]


def _no_stall_but_the_machines(run: Diagnosed, widest_gap_ms: float) -> None:
    """No stall, or one no longer than the stream's widest gap between events plus what
    held the client and the lab back while the run went (a process held between two
    events widens the gap between them); never one the verdict names."""
    d = run.diagnosis
    assert d.verdict.primary is not Kind.STALLS, d.findings
    for f in d.findings:
        if f.kind is Kind.STALLS:
            assert f.evidence["longest_ms"] <= 1.25 * widest_gap_ms + run.held.ms, (f, run.held)


IRREGULAR = LabConfig(latency=HEALTHY, seed=1, tokens_per_event=1, tokens_per_event_max=8)
"""The healthy endpoint writing 1 to 8 tokens an event, drawn from its seed."""


@pytest.fixture(scope="module")
def irregular() -> Diagnosed:
    """The diagnosis of :data:`IRREGULAR`, with the load step's burst (a budget of 8 s),
    read by two tests: its verdict like the other healthy endpoints' writing several
    tokens per event, and the swing of its first tokens."""
    return _diagnose(IRREGULAR, max_seconds=8.0)


@pytest.mark.parametrize(
    ("tokens", "most"),
    [(4, None), (8, None), (1, 8)],
    ids=["4-per-event", "8-per-event", "1-to-8-per-event"],
)
def test_a_healthy_endpoint_writing_several_tokens_per_event_is_healthy(
    tokens: int, most: int | None, request: pytest.FixtureRequest
) -> None:
    """15 ms a token is healthy however many tokens each event carries: the gap between
    two 8-token events (120 ms) is eight tokens' time, not a slow token or a stall."""
    config = LabConfig(latency=HEALTHY, seed=1, tokens_per_event=tokens, tokens_per_event_max=most)
    run = request.getfixturevalue("irregular") if config == IRREGULAR else _diagnose(config)
    d = run.diagnosis
    assert d.verdict.primary is Kind.HEALTHY, d.findings
    assert Kind.DECODE not in _kinds(d)
    _no_stall_but_the_machines(run, (most or tokens) * HEALTHY.decode_ms_per_token)
    assert d.failed == 0


def test_irregular_tokens_per_event_are_no_swing_of_the_first_token(irregular: Diagnosed) -> None:
    """1 to 8 tokens an event at 15 ms a token and a 20 ms prefill: the first event comes
    up to 105 ms after the first token, which swung the first events of identical
    requests sent alone by a CV of 0.65 and a p95/p50 of 2.4 and named queueing. The
    load step reads the first token's time (the first event's later tokens, by its
    share of the characters, taken off at the stream's rate): a CV of about 0.3, the
    lab's words of 2 to 11 letters reading a token or so out. A busy machine swings a
    first token of ~27 ms too: the margins below the rule's bounds widen by the noise
    measured around the run, never past the bounds themselves."""
    d = irregular.diagnosis
    p50 = d.load["ttft_p50_ms"] or 1.0
    widen = WIDEN * irregular.noise_ms / p50
    assert (d.load["sequential_n"] or 0) >= MIN_SWING_N
    assert (d.load["ttft_cv"] or 0) < min(QUEUE_CV, QUEUE_CV / 1.25 + widen), d.load
    assert (d.load["ttft_p95_over_p50"] or 0) < min(QUEUE_P95_P50, QUEUE_P95_P50 / 1.15 + widen)
    assert Kind.QUEUEING not in _kinds(d), d.findings
    assert d.verdict.primary is Kind.HEALTHY, d.findings


def test_keepalive_comments_with_enough_slots_are_healthy() -> None:
    """Keep-alive comments through each prefill, with a slot for every request the load
    step sends at once: the early first byte hides nothing, and nothing is slow."""
    config = LabConfig(latency=HEALTHY, seed=1, slots=4, keepalive_comment_ms=5.0)
    d = _diagnose(config, max_seconds=8.0).diagnosis
    assert d.load["concurrency"] == 4
    assert d.verdict.primary is Kind.HEALTHY, d.findings


def test_keepalive_comments_do_not_hide_a_queue(machine_noise: MachineNoise) -> None:
    """Two slots for the load step's four requests at once: they queue, comments or not,
    and the queue is read between first byte and first token. The finding cites the
    wait the comments told: two of the four waited a whole answer for a slot, about the
    rise of their first tokens, and none sent alone waited. Kept four in flight on two
    slots, a request waits a whole answer: twice the burst's mean."""
    config = LabConfig(latency=HEALTHY, seed=1, slots=2, keepalive_comment_ms=10.0)
    d = _diagnose(config, max_seconds=8.0).diagnosis
    assert d.verdict.primary is Kind.QUEUEING, d.findings
    (finding,) = [f for f in d.findings if f.kind is Kind.QUEUEING]
    assert "by the server's ': keep-alive' comments, a request among 4 waited" in finding.rule
    assert finding.evidence["keepalive_alone_ms"] == 0.0
    told, rise = finding.evidence["keepalive_concurrent_ms"], finding.evidence["burst_rise_ms"]
    machine_noise.assert_near(told, rise, 20.0, 0.5 * rise)
    assert finding.evidence["concurrent_waited_share"] == 0.5
    machine_noise.assert_near(finding.share_ms, 2 * rise, 40.0, rise)


def test_slow_decode_writing_eight_tokens_per_event_is_decode() -> None:
    """60 ms a token, eight an event: decode, at about 60 ms a token (not 480)."""
    slow = dataclasses.replace(HEALTHY, decode_ms_per_token=60.0)
    run = _diagnose(LabConfig(latency=slow, seed=1, tokens_per_event=8), max_seconds=8.0)
    d = run.diagnosis
    assert d.verdict.primary is Kind.DECODE, d.findings
    (finding,) = [f for f in d.findings if f.kind is Kind.DECODE]
    assert finding.evidence["tpot_ms"] == pytest.approx(60.0, rel=0.2)
    _no_stall_but_the_machines(run, 8 * slow.decode_ms_per_token)
