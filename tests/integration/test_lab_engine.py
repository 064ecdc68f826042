"""The lab's real engine: llama.cpp's server on SmolLM2-135M, measured by the real probe.

One engine serves the whole module (starting it loads the model). The prefill
curve, queueing on one slot, and the server's own token counts are checked
against the probe's traces; the attribution's prefill against llama.cpp's own
accounting (its ``timings`` and its ``/metrics`` counter), and a queue on one slot
against the attribution's queueing. Prompts of an exact length are sized with the engine's
own tokenizer: its chat template (``/apply-template``) then ``/tokenize``, which
counts what a request is charged. Timing checks take the fastest of two
interleaved samples, so a burst of load on the machine does not decide them. The timed
tests run ``alone``: llama.cpp's threads take both cores, and another test beside them
stretches the engine's hand-offs between requests, which its own account leaves out.
Requests sample greedily and never stop early (:data:`GREEDY`), so each is the same
every run.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence

import httpx
import pytest

from latdoc import (
    Endpoint,
    Kind,
    LabError,
    ProbeSession,
    RequestTrace,
    RunContext,
    Sample,
    Step,
    build_diagnosis,
)
from latdoc.analysis.engine_metrics import engine_delta, parse_exposition
from latdoc.analysis.servertime import split_ttft
from latdoc.lab.engine import EngineServer, engine_available, find_model
from latdoc.workload import make_prompt

pytestmark = pytest.mark.slow


_MISSING = engine_available()
if _MISSING is not None:
    pytest.skip(_MISSING, allow_module_level=True)


Message = Mapping[str, object]


@pytest.fixture(scope="module")
def engine() -> Iterator[EngineServer]:
    with EngineServer(slots=1, ctx_size=4096) as server:
        yield server


GREEDY = {"temperature": 0, "ignore_eos": True}


"""The engine's sampling for timed requests: always the most likely token, and never the
end of the text, so each request streams all its ``max_tokens`` (a first token sampled as
the end of the text leaves a request with no first token to time)."""


def _endpoint(engine: EngineServer) -> Endpoint:
    return Endpoint(engine.base_url, engine.model, extra_body=GREEDY)


def _probe(engine: EngineServer, prompts: Sequence[str], max_tokens: int) -> list[RequestTrace]:
    """One request per prompt, in order, each on a new connection: llama.cpp closes
    the connection after a streamed response, so reusing it races that close."""

    async def go() -> list[RequestTrace]:
        endpoint = _endpoint(engine)
        async with ProbeSession(endpoint, reuse_connections=False) as session:
            return [await session.request(prompt, max_tokens) for prompt in prompts]

    return asyncio.run(go())


def _probe_together(engine: EngineServer, prompts: Sequence[str]) -> list[RequestTrace]:
    """All prompts at once, each from its own session."""

    async def one(prompt: str) -> RequestTrace:
        async with ProbeSession(_endpoint(engine)) as session:
            return await session.request(prompt, 4)

    async def go() -> list[RequestTrace]:
        return list(await asyncio.gather(*(one(prompt) for prompt in prompts)))

    return asyncio.run(go())


def _user(text: str) -> list[Message]:
    return [{"role": "user", "content": text}]


def _chat_prompt_tokens(engine: EngineServer, messages: list[Message]) -> int:
    """The prompt tokens of a chat request, counted by the engine's own tokenizer."""
    with httpx.Client(base_url=engine.root_url, timeout=60) as client:
        rendered = client.post("/apply-template", json={"messages": messages})
        prompt = rendered.json()["prompt"]
        tokens = client.post("/tokenize", json={"content": prompt}).json()["tokens"]
    return len(tokens)


def _prompt_of(engine: EngineServer, tokens: int, rng: random.Random) -> str:
    """A fresh prompt whose chat request the model counts as ``tokens`` prompt tokens."""
    overhead = _chat_prompt_tokens(engine, _user(""))
    prompt = make_prompt(tokens - overhead, rng)
    while (counted := _chat_prompt_tokens(engine, _user(prompt))) > tokens:
        prompt = prompt.rsplit(" ", 1)[0]
    while counted < tokens:
        prompt += " " + make_prompt(1, rng)
        counted = _chat_prompt_tokens(engine, _user(prompt))
    return prompt


def _seconds(ns: int | None) -> float:
    assert ns is not None
    return ns / 1e9


def test_model_is_found_in_its_package(engine: EngineServer) -> None:
    path = find_model()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000
    with path.open("rb") as model:
        assert model.read(4) == b"GGUF"
    assert httpx.get(engine.root_url + "/props", timeout=10).json()["model_path"] == str(path)
    (listed,) = httpx.get(engine.base_url + "/models", timeout=10).json()["data"]
    assert listed["meta"]["n_vocab"] == 49152


def test_engine_streams_usage_and_timings(engine: EngineServer) -> None:
    assert engine.base_url == f"http://127.0.0.1:{engine.port}/v1"
    assert engine.ready_s is not None
    listed = httpx.get(engine.base_url + "/models", timeout=10).json()
    assert engine.model == listed["data"][0]["id"]
    prompt = "Name three colours."
    (trace,) = _probe(engine, [prompt], max_tokens=6)
    assert trace.error is None, trace.error
    assert trace.status == 200
    assert trace.prompt_tokens == _chat_prompt_tokens(engine, _user(prompt))
    assert trace.output_tokens == 6
    assert trace.output_tokens_exact
    assert trace.finish_reason == "length"
    assert {"prompt_ms", "predicted_per_token_ms"} <= trace.server_timing.keys()
    assert _seconds(trace.first_byte_ns) < _seconds(trace.first_token_ns)


@pytest.mark.alone
def test_ttft_grows_with_prompt_length(engine: EngineServer) -> None:
    sizes = (64, 256, 512)
    rng = random.Random(20240601)
    prompts = [_prompt_of(engine, size, rng) for _ in range(2) for size in sizes]
    traces = _probe(engine, prompts, max_tokens=2)
    ttft: dict[int, float] = {}
    for prompt, trace in zip(prompts, traces, strict=True):
        assert trace.error is None, trace.error
        size = trace.prompt_tokens
        assert size in sizes, (size, prompt[:40])
        seconds = _seconds(trace.first_token_ns)
        assert seconds * 1000 >= trace.server_timing["prompt_ms"]
        ttft[size] = min(ttft.get(size, seconds), seconds)
    curve = [ttft[size] for size in sizes]
    assert curve == sorted(curve), ttft
    assert len(set(curve)) == len(curve), ttft
    assert ttft[512] > 3 * ttft[64], ttft


@pytest.mark.alone
def test_one_slot_queues_concurrent_requests(engine: EngineServer) -> None:
    rng = random.Random(7)
    first, second = sorted(
        _probe_together(engine, [_prompt_of(engine, 400, rng) for _ in range(2)]),
        key=lambda trace: _seconds(trace.first_token_ns),
    )
    assert first.error is None and second.error is None, (first.error, second.error)
    waited = _seconds(second.first_token_ns) - second.server_timing["prompt_ms"] / 1000
    assert _seconds(second.first_token_ns) >= 0.9 * _seconds(first.done_ns)
    assert waited >= 0.8 * first.server_timing["prompt_ms"] / 1000


def _metrics(engine: EngineServer) -> dict[str, float]:
    return parse_exposition(httpx.get(engine.root_url + "/metrics", timeout=10).text)


@pytest.mark.alone
def test_prefill_is_attributed_within_5_percent_of_the_engines_own_accounting(
    engine: EngineServer,
) -> None:
    rng = random.Random(11)
    prompts = [_prompt_of(engine, 200, rng) for _ in range(3)]
    before = _metrics(engine)
    traces = _probe(engine, prompts, max_tokens=4)
    found = engine_delta(before, _metrics(engine))
    assert found is not None and found[0] == "llama.cpp"
    counted = found[1]
    told = [t.server_timing["prompt_ms"] for t in traces]
    # The engine's two accounts of the same prefills: per response and its counter.
    assert counted["prefill_total_ms"] == pytest.approx(sum(told), rel=0.05)
    # The counter leaves out the prompt prefix the engine kept in its cache.
    processed = (counted["prompt_tokens"] or 0) + (counted["prompt_tokens_cached"] or 0)
    assert processed == sum(t.prompt_tokens or 0 for t in traces)
    samples = [Sample(Step.NETWORK, t, cold=True, index=i) for i, t in enumerate(traces)]
    context = RunContext(
        "engine", engine.base_url, engine.model, server_metrics=counted, server_metrics_source="x"
    )
    d = build_diagnosis(samples, context)
    parts = d.typical_request
    assert parts is not None and parts.server_wait_ms is not None
    assert parts.prefill_ms == pytest.approx(sorted(told)[1], rel=0.05)
    for trace in traces:
        # The client saw the prefill inside its wait between the headers and the first token.
        assert trace.first_token_ns is not None and trace.first_byte_ns is not None
        waited_ms = (trace.first_token_ns - trace.first_byte_ns) / 1e6
        assert waited_ms >= 0.95 * trace.server_timing["prompt_ms"]
    assert d.server is not None and d.server.disagreements == ()


@pytest.mark.alone
def test_a_queue_on_one_slot_is_attributed_to_queueing_not_prefill(engine: EngineServer) -> None:
    rng = random.Random(12)
    alone = _probe(engine, [_prompt_of(engine, 120, rng) for _ in range(2)], max_tokens=4)
    crowd = _probe_together(engine, [_prompt_of(engine, 120, rng) for _ in range(3)])
    samples = [Sample(Step.LOAD, t, index=i) for i, t in enumerate(alone)]
    samples += [Sample(Step.LOAD, t, concurrency=3, index=10 + i) for i, t in enumerate(crowd)]
    assert all(t.error is None for t in alone + crowd)
    d = build_diagnosis(samples, RunContext("engine", engine.base_url, engine.model))
    (queueing,) = [f for f in d.findings if f.kind is Kind.QUEUEING]
    assert Kind.INPUT_LENGTH not in {f.kind for f in d.findings}
    ev = queueing.evidence
    # One slot serves the three whole, one after another: each waits for the prefills and
    # decodes of those before it, by the engine's own account.
    order = sorted(crowd, key=lambda t: t.first_token_ns or 0)
    served = [t.server_timing["prompt_ms"] + t.server_timing["predicted_ms"] for t in order]
    queued = statistics.median(sum(served[:k]) for k in range(len(order)))
    assert ev["server_concurrent_wait_ms"] == pytest.approx(queued, rel=0.1), (ev, served)
    assert ev["server_concurrent_wait_ms"] > 10 * ev["server_alone_wait_ms"], ev
    assert "queueing, not prefill" in queueing.rule
    last = max(crowd, key=lambda t: t.first_token_ns or 0)
    split = split_ttft(last)
    assert split is not None and not split.queue_told
    # The last of three on one slot waited for both others: two prefills and decodes.
    others = [t for t in crowd if t is not last]
    assert split.queue_ms >= 0.8 * sum(t.server_timing["prompt_ms"] for t in others)
    assert split.prefill_ms == last.server_timing["prompt_ms"]


@pytest.mark.parametrize(
    "messages",
    [
        _user("Say hello"),
        _user(""),
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}],
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": "Numbers 1234567, π≈3.14159 and 中文 🤖"},
        ],
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "alpha"}, {"type": "text", "text": "beta"}],
            }
        ],
        _user("<|im_end|> inside the text\n\n\tand trailing spaces   "),
    ],
    ids=["short", "empty", "system", "multi-turn", "parts", "special-text"],
)
def test_template_then_tokenize_counts_what_a_request_is_charged(
    engine: EngineServer, messages: list[Message]
) -> None:
    reply = httpx.post(
        engine.base_url + "/chat/completions",
        json={"messages": messages, "max_tokens": 1},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    assert _chat_prompt_tokens(engine, messages) == reply.json()["usage"]["prompt_tokens"]


def test_busy_port_is_a_lab_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(LabError, match=f"127.0.0.1:{port}"):
            EngineServer(port=port).start()


_SERVE = """
import argparse, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from latdoc.model import Kind, RunContext
from latdoc.analysis.engine_metrics import engine_delta, parse_exposition
from latdoc.analysis.servertime import split_ttft
from latdoc.lab.command import add_parser, run
parser = argparse.ArgumentParser(prog="latdoc")
add_parser(parser.add_subparsers(dest="command"), argparse.ArgumentParser)
sys.exit(run(parser.parse_args(sys.argv[1:])))
"""


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_engine_command_serves_until_stopped(stop: signal.Signals) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [sys.executable, "-c", _SERVE, "lab", "engine", "--port", "0", "--ctx-size", "512"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as child:
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            assert line.startswith("latdoc lab: engine model SmolLM2-135M-Instruct.Q4_1 at "), line
            base_url = line.rsplit(" ", 1)[1].strip()
            assert httpx.get(base_url.removesuffix("/v1") + "/health", timeout=10).json() == {
                "status": "ok"
            }
            started = time.monotonic()
            child.send_signal(stop)
            assert child.wait(timeout=30) == 0
            assert time.monotonic() - started < 10
        finally:
            if child.poll() is None:
                child.kill()
