"""Remedies' effects of known size: each knob, measured by the real probe against the lab.

``latdoc verify`` asks whether a change (a lower ``max_tokens``, another model, a
shared prompt prefix, HTTP/2) makes an endpoint faster. These tests show that the
lab's knobs produce exactly the effect their truth methods say, on and off: the
measured difference lies within 15 % of the planned one when a knob is on, and
near zero when it is off. Timing runs sequentially against an in-process
:class:`LabServer`, or against a :class:`LabProcess` when requests run at once.

On a busy machine every request can be late by a few milliseconds, so each
tolerance is widened by the noise the test measured in the same run: the
machine's scheduling noise (:mod:`machine_noise`) and the spread of its own
samples, whose planned times are equal. The widening is capped below the effect,
so a knob without its effect still fails.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from latdoc import Endpoint, ProbeSession, RequestTrace
from latdoc.lab.command import config_from_args
from latdoc.lab.sim import (
    CHAT_MESSAGE_OVERHEAD,
    CHAT_REPLY_OVERHEAD,
    LabConfig,
    LabProcess,
    LabServer,
    LatencyModel,
    chat_prompt_token_list,
    count_tokens,
    output_text,
)
from machine_noise import MachineNoise, spread_ms
from unit.lab.sim.test_lab_effects import BIG, SMALL, _serve_args

OVERHEAD = CHAT_MESSAGE_OVERHEAD + CHAT_REPLY_OVERHEAD


FAST = LatencyModel(prefill_base_ms=2.0, prefill_ms_per_token=0.0, decode_ms_per_token=0.5)


REL_TOLERANCE = 0.15


"""How close a measured effect must come to the planned one: what verify promises."""


NO_EFFECT_MS = 6.0


"""How small a difference must be when the knob is off (timer and loop noise)."""


LabTruth = dict[str, Any]


def _events(text: str) -> list[str]:
    return [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]


Arm = tuple[str, int, str]


"""One kind of request: ``(prompt, max_tokens, model)``."""


Sample = tuple[RequestTrace, LabTruth]


async def _measure(session: ProbeSession, prompt: str, max_tokens: int) -> Sample:
    truth: LabTruth = {}

    def keep_truth(event: Any, _t_ns: int) -> None:
        if isinstance(event, dict) and "lab" in event:
            truth.update(event["lab"])

    trace = await session.request(prompt, max_tokens, on_event=keep_truth)
    assert trace.error is None, trace.error
    return trace, truth


def _arms(base_url: str, arms: list[Arm], repeats: int = 5) -> list[list[Sample]]:
    """``repeats`` requests of each arm, interleaved and one at a time.

    Each model gets a session of its own, warmed up, so every request measured
    reuses an open connection.
    """

    async def go() -> list[list[Sample]]:
        models = {model for _, _, model in arms}
        sessions = {model: ProbeSession(Endpoint(base_url, model)) for model in models}
        try:
            for session in sessions.values():
                await session.request("warm up", 1)
            samples: list[list[Sample]] = [[] for _ in arms]
            for _ in range(repeats):
                for (prompt, max_tokens, model), arm in zip(arms, samples, strict=True):
                    arm.append(await _measure(sessions[model], prompt, max_tokens))
            return samples
        finally:
            for session in sessions.values():
                await session.aclose()

    return asyncio.run(go())


def _median(values: Iterator[float | None]) -> float:
    return statistics.median(v for v in values if v is not None)


def _spread(*arms: list[Sample]) -> float:
    """The largest spread of TTFT within one arm: the noise of requests planned alike."""
    return max(spread_ms(t.ttft_ms or 0 for t, _ in arm) for arm in arms)


def _assert_effect(
    noise: MachineNoise, measured: float, planned: float, spread: float = 0.0
) -> None:
    noise.assert_effect(measured, planned, REL_TOLERANCE, extra_ms=spread)


def _assert_no_effect(noise: MachineNoise, measured: float, effect_when_on: float) -> None:
    """Near zero: within :data:`NO_EFFECT_MS` widened by the noise, and always well
    under the effect the knob has when on."""
    bound = min(noise.no_effect_bound_ms(NO_EFFECT_MS), 0.5 * effect_when_on)
    assert abs(measured) < bound, (measured, bound)


@pytest.fixture(scope="module")
def short_answers() -> Iterator[LabServer]:
    with LabServer(LabConfig(latency=FAST, answer_tokens=5)) as lab:
        yield lab


def _body(path: str, stream: bool, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "lab-sim", "stream": stream, **extra}
    if path == "/chat/completions":
        body["messages"] = [{"role": "user", "content": "Hello, world"}]
    else:
        body["prompt"] = "Hello, world"
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def _answer(path: str, response: httpx.Response) -> tuple[str, str, int]:
    """The text, finish reason and ``completion_tokens`` of a response."""
    chat = path == "/chat/completions"
    if not response.headers["content-type"].startswith("text/event-stream"):
        document = response.json()
        choice = document["choices"][0]
        text = choice["message"]["content"] if chat else choice["text"]
        return text, choice["finish_reason"], document["usage"]["completion_tokens"]
    data = _events(response.text)
    assert data[-1] == "[DONE]"
    *content, finish, usage = (json.loads(d) for d in data[:-1])
    if chat:
        content = content[1:]
    texts = [
        c["choices"][0]["delta"]["content"] if chat else c["choices"][0]["text"] for c in content
    ]
    return (
        "".join(texts),
        finish["choices"][0]["finish_reason"],
        usage["usage"]["completion_tokens"],
    )


@pytest.mark.parametrize("path", ["/chat/completions", "/completions"])
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("extra", "tokens", "reason"),
    [
        ({"max_tokens": 20}, 5, "stop"),
        ({"max_tokens": 5}, 5, "stop"),
        ({"max_tokens": 4}, 4, "length"),
        ({"max_completion_tokens": 2}, 2, "length"),
        ({}, 5, "stop"),
    ],
)
def test_answer_ends_by_itself_unless_cut(
    short_answers: LabServer,
    path: str,
    stream: bool,
    extra: dict[str, int],
    tokens: int,
    reason: str,
) -> None:
    url = f"{short_answers.base_url}{path}"
    response = httpx.post(url, json=_body(path, stream, **extra), timeout=5)
    assert response.status_code == 200
    assert _answer(path, response) == (output_text(tokens), reason, tokens)


def test_answer_length_sets_the_stream_time(machine_noise: MachineNoise) -> None:
    """An answer of 8 tokens streams 7 gaps whatever ``max_tokens``; off, it runs to 32."""
    latency = LatencyModel(prefill_base_ms=20, prefill_ms_per_token=0, decode_ms_per_token=10)
    prompt = "Why is the sky blue?"
    planned = {answer: latency.total_ms(0, answer) - latency.prefill_ms(0) for answer in (8, 32)}
    assert planned == {8: 70.0, 32: 310.0}
    for answer, expected_tokens, expected_reason in ((8, 8, "stop"), (None, 32, "length")):
        with LabServer(LabConfig(latency=latency, answer_tokens=answer)) as lab:
            (arm,) = _arms(lab.base_url, [(prompt, 32, "lab-sim")], 3)
        traces = [trace for trace, _ in arm]
        assert {(t.output_tokens, t.finish_reason) for t in traces} == {
            (expected_tokens, expected_reason)
        }
        _assert_effect(
            machine_noise,
            _median(t.stream_ms for t in traces),
            planned[expected_tokens],
            spread_ms(t.stream_ms or 0 for t in traces),
        )


@pytest.mark.parametrize("per_1k", [100.0, 0.0])
def test_lower_max_tokens_saves_the_reservation(per_1k: float, machine_noise: MachineNoise) -> None:
    """Same 4-token answer, ``max_tokens`` 1000 vs 100: TTFT differs by 90 ms, or 0 off."""
    latency = LatencyModel(
        prefill_base_ms=20,
        prefill_ms_per_token=0,
        decode_ms_per_token=1,
        reserve_ms_per_1k_max_tokens=per_1k,
    )
    planned = latency.reserve_ms(1000) - latency.reserve_ms(100)
    with LabServer(LabConfig(latency=latency, answer_tokens=4)) as lab:
        high, low = _arms(lab.base_url, [("hi", 1000, "lab-sim"), ("hi", 100, "lab-sim")])
    measured = _median(t.ttft_ms for t, _ in high) - _median(t.ttft_ms for t, _ in low)
    for (trace, truth), max_tokens in [*((h, 1000) for h in high), *((lo, 100) for lo in low)]:
        assert (trace.output_tokens, trace.finish_reason) == (4, "stop")
        assert trace.server_timing["prefill"] == 20.0
        if per_1k:
            assert trace.server_timing["reserve"] == latency.reserve_ms(max_tokens)
            assert truth["reserve_ms"] == latency.reserve_ms(max_tokens)
        else:
            assert "reserve" not in trace.server_timing
            assert truth == {}
    if per_1k:
        assert planned == 90.0
        _assert_effect(machine_noise, measured, planned, _spread(high, low))
    else:
        _assert_no_effect(machine_noise, measured, 90.0)


def test_reservation_delays_a_whole_document() -> None:
    latency = LatencyModel(
        prefill_base_ms=5,
        prefill_ms_per_token=0,
        decode_ms_per_token=1,
        reserve_ms_per_1k_max_tokens=200,
    )
    with LabServer(LabConfig(latency=latency, answer_tokens=2)) as lab, httpx.Client() as http:
        url = f"{lab.base_url}/chat/completions"
        body = _body("/chat/completions", False, max_tokens=500)
        http.post(url, json=body)
        response = http.post(url, json=body)
    assert response.elapsed.total_seconds() * 1000 >= 100 + 5 + 1
    assert "reserve;dur=100.000, prefill;dur=5.000" in response.headers["server-timing"]
    assert response.json()["lab"]["reserve_ms"] == 100.0


def test_each_model_is_timed_by_its_own_latency(machine_noise: MachineNoise) -> None:
    """The child process serves both models; TTFT differs by the prefill gap, 100 ms."""
    config = LabConfig(latency=SMALL, alt_models={"lab-big": BIG})
    with LabProcess(config) as lab:
        listed = httpx.get(f"{lab.base_url}/models").json()["data"]
        unknown = httpx.post(
            f"{lab.base_url}/chat/completions",
            json={**_body("/chat/completions", False), "model": "gpt-9"},
        )
        big_body = {**_body("/chat/completions", True, max_tokens=2), "model": "lab-big"}
        big_stream = httpx.post(f"{lab.base_url}/chat/completions", json=big_body)
        small, big = _arms(lab.base_url, [("hi", 4, "lab-sim"), ("hi", 4, "lab-big")])
    assert [m["id"] for m in listed] == ["lab-sim", "lab-big"]
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "model_not_found"
    assert {json.loads(d)["model"] for d in _events(big_stream.text)[:-1]} == {"lab-big"}
    for arm, latency in ((small, SMALL), (big, BIG)):
        for trace, truth in arm:
            assert trace.server_timing["prefill"] == latency.prefill_ms(trace.prompt_tokens or 0)
            assert trace.server_timing["tpot"] == latency.decode_ms_per_token
            assert truth["decode_ms"] == 3 * latency.decode_ms_per_token
    planned = BIG.prefill_ms(0) - SMALL.prefill_ms(0)
    measured = _median(t.ttft_ms for t, _ in big) - _median(t.ttft_ms for t, _ in small)
    _assert_effect(machine_noise, measured, planned, _spread(small, big))


CONTEXT = " ".join(f"fact{i} is true." for i in range(60))


"""A long shared context: 240 lab tokens, fifteen 16-token blocks."""


def _shared_prefix_tokens(a: str, b: str) -> int:
    tokens = [chat_prompt_token_list([{"role": "user", "content": p}]) for p in (a, b)]
    shared = 0
    for x, y in zip(*tokens, strict=False):
        if x != y:
            break
        shared += 1
    return shared


@pytest.mark.parametrize("prefix_cache", [True, False])
def test_a_shared_prefix_skips_its_prefill(prefix_cache: bool, machine_noise: MachineNoise) -> None:
    """Same context, a different question: the cached blocks' prefill is saved, or none."""
    latency = LatencyModel(prefill_base_ms=10, prefill_ms_per_token=0.5, decode_ms_per_token=1)
    config = LabConfig(latency=latency, prefix_cache=prefix_cache)
    questions = [f"{CONTEXT} Question {i}: why?" for i in range(6)]
    n = count_tokens(questions[0]) + OVERHEAD
    assert n == 240 + 5 + OVERHEAD
    shared = _shared_prefix_tokens(questions[0], questions[1])
    cached = shared // config.prefix_block_tokens * config.prefix_block_tokens
    assert (shared, cached) == (3 + 240 + 1, 240)

    # Without the cache every request prefills in full, the first question asked again
    # too: it is asked three times, so one request a busy machine holds up cannot pass
    # for a difference (with the cache, its second asking would hit).
    asked_first = 1 if prefix_cache else 3

    async def go(base_url: str) -> list[Sample]:
        async with ProbeSession(Endpoint(base_url, "lab-sim")) as session:
            await session.request("warm up", 1)
            firsts = [await _measure(session, questions[0], 2) for _ in range(asked_first)]
            return firsts + [await _measure(session, q, 2) for q in questions[1:]]

    with LabServer(config) as lab:
        samples = asyncio.run(go(lab.base_url))
    firsts, rest = samples[:asked_first], samples[asked_first:]
    first = firsts[0]
    planned_full = latency.prefill_ms(n)
    planned_cached = latency.prefill_ms(n, cached if prefix_cache else 0)
    assert first[0].server_timing["prefill"] == planned_full
    for trace, _ in rest:
        assert trace.prompt_tokens == n
        assert trace.server_timing["prefill"] == pytest.approx(planned_cached)
        assert trace.cached_prompt_tokens == (cached if prefix_cache else None)
    if prefix_cache:
        assert first[0].cached_prompt_tokens == 0
        assert [truth["cached_tokens"] for _, truth in rest] == [cached] * 5
        assert planned_full - planned_cached == 0.5 * 240
    saved = _median(t.ttft_ms for t, _ in firsts) - _median(t.ttft_ms for t, _ in rest)
    if prefix_cache:
        _assert_effect(machine_noise, saved, planned_full - planned_cached, _spread(rest))
    else:
        _assert_no_effect(machine_noise, saved, 0.5 * 240)


@pytest.mark.parametrize("slots", [8, 4])
def test_http2_streams_on_one_connection_run_in_parallel(
    slots: int, machine_noise: MachineNoise
) -> None:
    """8 streams multiplexed on one HTTP/2 connection: with 8 slots every TTFT is one
    prefill, the last well before twice one stream's alone; with 4 the second half waits
    one service time (so a serialising server would show)."""
    latency = LatencyModel(prefill_base_ms=100, prefill_ms_per_token=0, decode_ms_per_token=5)
    streams = 8

    async def go(base_url: str, ca_file: str) -> tuple[RequestTrace, list[RequestTrace]]:
        endpoint = Endpoint(base_url, "lab-sim")
        async with ProbeSession(endpoint, http2=True, cacert=ca_file, max_connections=1) as session:
            await session.request("warm up", 1)
            alone = await session.request("hi", 4)
            together = await asyncio.gather(*(session.request("hi", 4) for _ in range(streams)))
            return alone, list(together)

    with LabProcess(LabConfig(latency=latency, slots=slots), tls=True, http2=True) as lab:
        assert lab.ca_file is not None
        alone, traces = asyncio.run(go(lab.base_url, lab.ca_file))
    assert all(t.error is None for t in traces), [t.error for t in traces]
    assert {t.http_version for t in traces} == {"HTTP/2"}
    assert len({t.connection_id for t in traces}) == 1
    assert not any(t.new_connection for t in traces)
    ttfts = sorted(t.ttft_ms or 0 for t in traces)
    prefill = latency.prefill_ms(0)
    service = latency.total_ms(0, 4)
    if slots >= streams:
        # The server ran all eight at once, and the client sent them so: every first token
        # comes after one prefill, and the last of them well before twice the first token
        # of one stream alone (measured just before, on the same connection, on the same
        # busy or quiet machine). Sent one after another, the last would come after seven
        # whole requests, some eight times one alone; on 4 slots, after one more (over
        # twice one alone on a quiet machine, and each of those would have queued).
        assert all(t.server_timing["queue"] == 0 for t in traces)
        assert ttfts[0] >= prefill
        assert alone.ttft_ms is not None and alone.ttft_ms >= prefill
        assert ttfts[-1] < 2 * alone.ttft_ms, (ttfts, alone.ttft_ms)
    else:
        first, second = ttfts[:slots], ttfts[slots:]
        _assert_effect(
            machine_noise,
            statistics.median(second) - statistics.median(first),
            service,
            max(spread_ms(first), spread_ms(second)),
        )


def test_header_flag_adds_a_header_to_every_response() -> None:
    args = _serve_args(["--header", "X-Accel-Buffering: no", "--header", "Via:1.1 edge"])
    config = config_from_args(args)
    assert config.extra_headers == (("X-Accel-Buffering", "no"), ("Via", "1.1 edge"))
    with LabServer(config) as lab:
        response = httpx.post(
            lab.base_url + "/chat/completions",
            json={"model": "lab-sim", "messages": [{"role": "user", "content": "hi"}],
                  "max_tokens": 2, "stream": True},
        )  # fmt: skip
    assert response.headers["x-accel-buffering"] == "no" and response.headers["via"] == "1.1 edge"
