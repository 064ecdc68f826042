"""The simulated endpoint against real clients on loopback: format, counting, timing, TLS, h2."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import socket
import ssl
import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from latdoc import LabError, UsageError
from latdoc.lab.command import config_from_args
from latdoc.lab.sim import (
    Fault,
    LabConfig,
    LabProcess,
    LabServer,
    LatencyModel,
    chat_prompt_tokens,
    count_tokens,
    in_flight,
    output_text,
    output_token,
    serve_forever,
)
from machine_noise import MachineNoise, run_delay_ms, spread_ms
from unit.lab.sim.test_lab_sim import MESSAGES, PROMPT_TOKENS, _serve_args

FAST = LatencyModel(prefill_base_ms=2.0, prefill_ms_per_token=0.0, decode_ms_per_token=0.5)


def chat(stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {"model": "lab-sim", "messages": MESSAGES, "stream": stream, **extra}


def events(lines: Iterator[str]) -> list[str]:
    return [line[len("data: ") :] for line in lines if line.startswith("data: ")]


def timed_events(
    client: httpx.Client, url: str, body: dict[str, Any]
) -> tuple[httpx.Response, float, list[tuple[float, str]]]:
    """POST a stream; return the response, the send time and each event's arrival."""
    arrivals: list[tuple[float, str]] = []
    sent = time.perf_counter()
    with client.stream("POST", url, json=body) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                arrivals.append((time.perf_counter(), line[len("data: ") :]))
    return response, sent, arrivals


def server_timing(response: httpx.Response) -> dict[str, float]:
    parts = (item.strip().split(";dur=") for item in response.headers["server-timing"].split(","))
    return {name: float(value) for name, value in parts}


@pytest.fixture(scope="module")
def server() -> Iterator[LabServer]:
    with LabServer(LabConfig(latency=FAST)) as lab:
        yield lab


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as http:
        yield http


def test_models(server: LabServer, client: httpx.Client) -> None:
    response = client.get(f"{server.base_url}/models")
    assert response.status_code == 200
    assert [m["id"] for m in response.json()["data"]] == ["lab-sim"]


def test_chat_stream_format(server: LabServer, client: httpx.Client) -> None:
    body = chat(max_tokens=5, stream_options={"include_usage": True})
    with client.stream("POST", f"{server.base_url}/chat/completions", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-lab-prompt-tokens"] == str(PROMPT_TOKENS)
        data = events(response.iter_lines())
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    role, *content, finish, usage = chunks
    assert role["choices"] == [
        {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
    ]
    texts = [c["choices"][0]["delta"]["content"] for c in content]
    assert texts == [output_token(k) for k in range(5)]
    assert all(count_tokens(t) == 1 for t in texts)
    assert finish["choices"] == [{"index": 0, "delta": {}, "finish_reason": "length"}]
    assert usage["choices"] == []
    assert usage["usage"] == {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": 5,
        "total_tokens": PROMPT_TOKENS + 5,
    }


def test_completions_stream_format(server: LabServer, client: httpx.Client) -> None:
    prompt = "Tell me, briefly: why is the sky blue?"
    body = {"model": "lab-sim", "prompt": prompt, "stream": True, "max_tokens": 4}
    body["stream_options"] = {"include_usage": True}
    with client.stream("POST", f"{server.base_url}/completions", json=body) as response:
        assert response.headers["x-lab-prompt-tokens"] == str(count_tokens(prompt))
        data = events(response.iter_lines())
    assert data[-1] == "[DONE]"
    *content, finish, usage = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "text_completion" for c in content)
    assert [c["choices"][0]["text"] for c in content] == [output_token(k) for k in range(4)]
    assert finish["choices"][0]["finish_reason"] == "length"
    assert finish["choices"][0]["text"] == ""
    assert usage["usage"]["prompt_tokens"] == count_tokens(prompt) == 11


def test_no_usage_chunk_unless_asked(server: LabServer, client: httpx.Client) -> None:
    response = client.post(f"{server.base_url}/chat/completions", json=chat(max_tokens=2))
    data = events(iter(response.text.splitlines()))
    assert len(data) == 1 + 2 + 1 + 1
    assert "usage" not in json.loads(data[-2])


@pytest.mark.parametrize(
    ("extra", "expected"),
    [({}, 32), ({"max_tokens": 3}, 3), ({"max_completion_tokens": 7, "max_tokens": 3}, 7)],
)
def test_output_length(
    server: LabServer, client: httpx.Client, extra: dict[str, int], expected: int
) -> None:
    response = client.post(f"{server.base_url}/chat/completions", json=chat(False, **extra))
    document = response.json()
    assert document["object"] == "chat.completion"
    assert document["choices"][0]["message"]["content"] == output_text(expected)
    assert document["choices"][0]["finish_reason"] == "length"
    assert document["usage"]["completion_tokens"] == expected
    assert document["usage"]["prompt_tokens"] == PROMPT_TOKENS


def test_completions_not_streamed(server: LabServer, client: httpx.Client) -> None:
    body = {"model": "lab-sim", "prompt": [1, 2, 3, 4], "max_tokens": 2}
    document = client.post(f"{server.base_url}/completions", json=body).json()
    assert document["choices"][0]["text"] == output_text(2)
    assert document["usage"] == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}


@pytest.mark.parametrize(
    ("path", "content", "status", "needle"),
    [
        ("/chat/completions", b"{not json", 400, "JSON"),
        ("/chat/completions", json.dumps({"messages": MESSAGES}).encode(), 404, "model"),
        ("/chat/completions", json.dumps(chat(model="gpt-9")).encode(), 404, "gpt-9"),
        ("/chat/completions", json.dumps({"model": "lab-sim"}).encode(), 400, "messages"),
        ("/chat/completions", json.dumps(chat(max_tokens=0)).encode(), 400, "max_tokens"),
        ("/completions", json.dumps({"model": "lab-sim"}).encode(), 400, "prompt"),
    ],
)
def test_invalid_requests(
    server: LabServer, client: httpx.Client, path: str, content: bytes, status: int, needle: str
) -> None:
    response = client.post(f"{server.base_url}{path}", content=content)
    assert response.status_code == status
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "code"}
    assert needle in error["message"]
    if status == 404:
        assert error["code"] == "model_not_found"


def test_unknown_route_and_method(server: LabServer, client: httpx.Client) -> None:
    assert client.get(f"{server.base_url}/nothing").json()["error"]["message"] == "Not Found"
    response = client.get(f"{server.base_url}/chat/completions")
    assert response.status_code == 405
    assert "error" in response.json()


def test_api_key(client: httpx.Client) -> None:
    http = client
    with LabServer(LabConfig(latency=FAST, api_key="sk-lab")) as lab:
        url = f"{lab.base_url}/chat/completions"
        denied = http.post(url, json=chat(), headers={"Authorization": "Bearer nope"})
        assert denied.status_code == 401
        assert denied.json()["error"]["code"] == "invalid_api_key"
        assert http.post(url, json=chat()).status_code == 401
        assert http.get(f"{lab.base_url}/models").status_code == 401
        ok = http.post(url, json=chat(max_tokens=1), headers={"Authorization": "Bearer sk-lab"})
        assert ok.status_code == 200
        assert events(iter(ok.text.splitlines()))[-1] == "[DONE]"


def test_reject_stream_options(client: httpx.Client) -> None:
    with LabServer(LabConfig(latency=FAST, reject_stream_options=True)) as lab:
        url = f"{lab.base_url}/chat/completions"
        body = chat(stream_options={"include_usage": True})
        response = client.post(url, json=body)
        assert response.status_code == 400
        assert "stream_options" in response.json()["error"]["message"]
        assert client.post(url, json=chat(max_tokens=1)).status_code == 200


def test_timing_follows_the_model(client: httpx.Client, machine_noise: MachineNoise) -> None:
    latency = LatencyModel(prefill_base_ms=50, prefill_ms_per_token=0.5, decode_ms_per_token=15)
    messages = [{"role": "user", "content": " ".join(["word"] * 93)}]
    n = chat_prompt_tokens(messages)
    assert n == 100
    planned = latency.prefill_ms(n)
    with LabServer(LabConfig(latency=latency)) as lab:
        client.get(f"{lab.base_url}/models")
        body = {"model": "lab-sim", "messages": messages, "stream": True, "max_tokens": 12}
        response, sent, arrivals = timed_events(client, f"{lab.base_url}/chat/completions", body)
    assert response.headers["x-lab-prompt-tokens"] == "100"
    assert server_timing(response) == {"prefill": planned, "tpot": 15.0}
    content = arrivals[1:13]
    ttft_ms = (content[0][0] - sent) * 1000
    assert (
        planned - 1 <= ttft_ms <= planned + machine_noise.bound_ms(planned * 0.1 + 5, planned / 2)
    )
    assert (arrivals[0][0] - sent) * 1000 < planned / 2
    gaps = [(b[0] - a[0]) * 1000 for a, b in itertools.pairwise(content)]
    machine_noise.assert_near(statistics.median(gaps), 15, 2, 7.5)
    machine_noise.assert_near((content[-1][0] - content[0][0]) * 1000, 11 * 15, 8, 11 * 15 / 2)


def test_headers_after_prefill(client: httpx.Client, machine_noise: MachineNoise) -> None:
    latency = LatencyModel(prefill_base_ms=60, prefill_ms_per_token=0, decode_ms_per_token=1)
    with LabServer(LabConfig(latency=latency, headers_after_prefill=True)) as lab:
        client.get(f"{lab.base_url}/models")
        sent = time.perf_counter()
        with client.stream("POST", f"{lab.base_url}/chat/completions", json=chat()) as response:
            headers_ms = (time.perf_counter() - sent) * 1000
            data = events(response.iter_lines())
    assert 59 <= headers_ms <= 60 + machine_noise.bound_ms(60 * 0.1 + 5, 30)
    assert json.loads(data[0])["choices"][0]["delta"]["role"] == "assistant"
    assert data[-1] == "[DONE]"


def test_jitter_is_seeded_and_bounded(client: httpx.Client) -> None:
    latency = LatencyModel(
        prefill_base_ms=20, prefill_ms_per_token=0, jitter_ms=5, decode_ms_per_token=0
    )
    runs = []
    body = chat(max_tokens=1)
    for _ in range(2):
        with LabServer(LabConfig(latency=latency, seed=7)) as lab:
            url = f"{lab.base_url}/chat/completions"
            runs.append([server_timing(client.post(url, json=body))["prefill"] for _ in range(5)])
    assert runs[0] == runs[1]
    assert all(15 <= p <= 25 for p in runs[0])
    assert len(set(runs[0])) > 1


def test_stamps_are_monotonic_server_write_times(
    client: httpx.Client, machine_noise: MachineNoise
) -> None:
    latency = LatencyModel(prefill_base_ms=10, prefill_ms_per_token=0, decode_ms_per_token=5)
    with LabServer(LabConfig(latency=latency, stamp_chunks=True)) as lab:
        body = chat(max_tokens=6, stream_options={"include_usage": True})
        response, sent, arrivals = timed_events(client, f"{lab.base_url}/chat/completions", body)
    origin = int(response.headers["x-lab-start-ns"])
    assert int(sent * 1e9) < origin
    received = [(int(t * 1e9), json.loads(d)["lab_t_ns"]) for t, d in arrivals[:-1]]
    assert len(received) == 1 + 6 + 2
    stamps = [stamp for _, stamp in received]
    assert stamps == sorted(stamps)
    assert all(stamp <= arrival for arrival, stamp in received)
    lateness_ms = [(stamps[1 + k] - origin) / 1e6 - (10 + 5 * k) for k in range(6)]
    # Each stamp within 5 ms of its schedule on a quiet machine, widened by the noise,
    # never to four tokens.
    late_bound = machine_noise.bound_ms(5, 20)
    assert all(0 <= late < late_bound for late in lateness_ms), (lateness_ms, late_bound)


def test_tls_verifies_with_the_ca_file() -> None:
    with LabServer(LabConfig(latency=FAST), tls=True) as lab:
        assert lab.base_url == f"https://localhost:{lab.port}/v1"
        assert lab.ca_file is not None
        ca_file = lab.ca_file
        context = ssl.create_default_context(cafile=ca_file)
        with httpx.Client(verify=context, http2=True) as http:
            response = http.post(f"{lab.base_url}/chat/completions", json=chat(max_tokens=2))
            assert response.http_version == "HTTP/1.1"
            assert events(iter(response.text.splitlines()))[-1] == "[DONE]"
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{lab.base_url}/models")
    assert not os.path.exists(ca_file)


def test_http2() -> None:
    with LabServer(LabConfig(latency=FAST), tls=True, http2=True) as lab:
        assert lab.ca_file is not None
        context = ssl.create_default_context(cafile=lab.ca_file)
        with httpx.Client(verify=context, http2=True) as http:
            body = chat(max_tokens=3, stream_options={"include_usage": True})
            with http.stream("POST", f"{lab.base_url}/chat/completions", json=body) as response:
                assert response.http_version == "HTTP/2"
                assert response.headers["x-lab-prompt-tokens"] == str(PROMPT_TOKENS)
                data = events(response.iter_lines())
    assert len(data) == 1 + 3 + 1 + 1 + 1
    assert data[-1] == "[DONE]"
    with pytest.raises(LabError, match="TLS"):
        LabServer(http2=True)


def test_tls_names_are_in_the_certificate() -> None:
    with LabServer(LabConfig(latency=FAST), tls=True, tls_names=["api.lab.test"]) as lab:
        assert lab.ca_file is not None
        context = ssl.create_default_context(cafile=lab.ca_file)
        for name in ("api.lab.test", "localhost"):
            with (
                socket.create_connection(("127.0.0.1", lab.port), timeout=5) as raw,
                context.wrap_socket(raw, server_hostname=name) as conn,
            ):
                assert conn.version() is not None
                assert ("DNS", "api.lab.test") in conn.getpeercert()["subjectAltName"]
        with (
            socket.create_connection(("127.0.0.1", lab.port), timeout=5) as raw,
            pytest.raises(ssl.SSLCertVerificationError),
        ):
            context.wrap_socket(raw, server_hostname="other.lab.test")
    with pytest.raises(LabError, match="tls=True"):
        LabServer(tls_names=["api.lab.test"])
    with pytest.raises(UsageError, match="TLS certificate"):
        LabServer(tls=True, tls_names=["not a name"])
    args = _serve_args(["--tls", "--tls-name", "API.lab.test", "--tls-name", "::1"])
    assert args.tls_names == ["api.lab.test", "::1"]
    with pytest.raises(UsageError, match="--tls-name needs --tls"):
        config_from_args(_serve_args(["--tls-name", "api.lab.test"]))


async def _concurrent_streams(
    url: str, streams: int, verify: ssl.SSLContext | bool = True, http2: bool = False
) -> list[list[dict[str, Any]]]:
    """Run ``streams`` chat streams of 10 tokens at once; return each one's chunks."""

    async def one(http: httpx.AsyncClient) -> list[dict[str, Any]]:
        async with http.stream("POST", url, json=chat(max_tokens=10)) as response:
            lines = [line async for line in response.aiter_lines()]
        return [json.loads(d) for d in events(iter(lines))[:-1]]

    limits = httpx.Limits(max_connections=streams)
    async with httpx.AsyncClient(limits=limits, verify=verify, http2=http2) as http:
        return await asyncio.gather(*(one(http) for _ in range(streams)))


def test_concurrent_streams_in_process() -> None:
    with LabServer(LabConfig(latency=FAST)) as lab:
        streams = asyncio.run(_concurrent_streams(f"{lab.base_url}/chat/completions", 32))
    assert len({chunks[0]["id"] for chunks in streams}) == 32
    for chunks in streams:
        texts = [c["choices"][0]["delta"].get("content") for c in chunks[1:-1]]
        assert texts == [output_token(k) for k in range(10)]


async def _stamped_streams(
    url: str, streams: int, verify: ssl.SSLContext | bool, http2: bool
) -> list[tuple[int, list[int]]]:
    """Each stream's schedule origin and its content chunks' server stamps."""

    async def one(http: httpx.AsyncClient) -> tuple[int, list[int]]:
        async with http.stream("POST", url, json=chat(max_tokens=10)) as response:
            origin = int(response.headers["x-lab-start-ns"])
            lines = [line async for line in response.aiter_lines()]
        chunks = [json.loads(d) for d in events(iter(lines))[1:11]]
        return origin, [chunk["lab_t_ns"] for chunk in chunks]

    limits = httpx.Limits(max_connections=streams)
    async with httpx.AsyncClient(limits=limits, verify=verify, http2=http2) as http:
        return await asyncio.gather(*(one(http) for _ in range(streams)))


@pytest.mark.alone
@pytest.mark.parametrize(("tls", "http2"), [(False, False), (True, True)])
def test_lab_process_keeps_time_under_load(
    tls: bool, http2: bool, machine_noise: MachineNoise
) -> None:
    latency = LatencyModel(prefill_base_ms=30, prefill_ms_per_token=0, decode_ms_per_token=5)
    config = LabConfig(latency=latency, stamp_chunks=True)
    with LabProcess(config, tls=tls, http2=http2) as lab:
        assert lab.base_url.endswith(f":{lab.port}/v1") and lab.pid is not None
        verify = ssl.create_default_context(cafile=lab.ca_file) if tls else True
        url = f"{lab.base_url}/chat/completions"
        held_before = run_delay_ms(lab.pid)
        streams = asyncio.run(_stamped_streams(url, 32, verify, http2))
        held_ms = run_delay_ms(lab.pid) - held_before
        ca_file = lab.ca_file
    assert lab.pid is None
    assert ca_file is None or not os.path.exists(ca_file)
    lateness_ms = sorted(
        (stamp - origin) / 1e6 - (30 + 5 * k)
        for origin, stamps in streams
        for k, stamp in enumerate(stamps)
    )
    assert len(lateness_ms) == 32 * 10
    summary = f"lateness ms: median {statistics.median(lateness_ms):.2f}, max {lateness_ms[-1]:.2f}"
    assert lateness_ms[0] >= 0, summary
    # 8 and 30 ms on a quiet machine, widened by the noise or by the lateness's own
    # spread (a busy machine delays the lab while the 32 streams run, when a noise
    # measurement before or after sees little); a lab that served the 32 streams one at
    # a time would be seconds late.
    spread = spread_ms(lateness_ms)
    summary += f", held off a core {held_ms:.1f} ms"
    assert statistics.median(lateness_ms) < machine_noise.bound_ms(8, 40, extra_ms=spread), summary
    # The tail is where the lab runs late while other work holds it off a core (a CPU hog
    # took 48 ms so): the time it waited for one is added to the quiet machine's 30 ms.
    p95 = lateness_ms[int(0.95 * len(lateness_ms))]
    assert p95 < machine_noise.bound_ms(30 + held_ms, 120, extra_ms=spread), summary


def test_client_disconnect_stops_the_stream() -> None:
    latency = LatencyModel(prefill_base_ms=1, prefill_ms_per_token=0, decode_ms_per_token=5)
    with LabServer(LabConfig(latency=latency)) as lab, httpx.Client(verify=False) as http:
        assert lab.app is not None
        url = f"{lab.base_url}/chat/completions"
        with http.stream("POST", url, json=chat(max_tokens=10_000)) as response:
            lines = response.iter_lines()
            next(lines)
            assert in_flight(lab.app) == 1
        deadline = time.monotonic() + 1
        while in_flight(lab.app) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert in_flight(lab.app) == 0


@pytest.mark.parametrize(("tls", "http2"), [(False, False), (True, True)])
def test_stop_ends_streams_quickly(tls: bool, http2: bool) -> None:
    threads_before = threading.active_count()
    lab = LabServer(LabConfig(latency=FAST), tls=tls, http2=http2)
    lab.start()
    verify = ssl.create_default_context(cafile=lab.ca_file) if tls else True
    with httpx.Client(verify=verify, http2=http2) as http:
        url = f"{lab.base_url}/chat/completions"
        with http.stream("POST", url, json=chat(max_tokens=1_000_000)) as response:
            lines = response.iter_lines()
            next(lines)
            started = time.perf_counter()
            lab.stop()
            assert time.perf_counter() - started < 1.0
            rest = events(lines)
    assert "[DONE]" not in rest
    assert threading.active_count() == threads_before
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{lab.base_url}/models", verify=verify)


def test_serve_forever_until_stopped() -> None:
    stop = threading.Event()
    ready: list[LabServer] = []

    def announce(lab: LabServer) -> None:
        ready.append(lab)
        stop.set()

    thread = threading.Thread(
        target=serve_forever,
        args=(LabConfig(latency=FAST), "127.0.0.1", 0),
        kwargs={"on_ready": announce, "stop": stop},
    )
    thread.start()
    thread.join(5)
    assert not thread.is_alive()
    assert ready[0].base_url.startswith("http://127.0.0.1:")
    assert ready[0].port > 0


def test_default_config_adds_nothing(server: LabServer, client: httpx.Client) -> None:
    body = chat(max_tokens=2, stream_options={"include_usage": True})
    response = client.post(f"{server.base_url}/chat/completions", json=body)
    lab_headers = {name for name in response.headers if name.startswith("x-lab-")}
    assert lab_headers == {"x-lab-prompt-tokens"}
    assert set(server_timing(response)) == {"prefill", "tpot"}
    chunks = [json.loads(d) for d in events(iter(response.text.splitlines()))[:-1]]
    assert all("lab" not in c for c in chunks)
    assert "prompt_tokens_details" not in chunks[-1]["usage"]


def test_context_length_exceeded(client: httpx.Client) -> None:
    with LabServer(LabConfig(latency=FAST, max_context_tokens=20)) as lab:
        url = f"{lab.base_url}/chat/completions"
        refused = client.post(url, json=chat(max_tokens=11))
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["code"] == "context_length_exceeded"
        assert error["type"] == "invalid_request_error"
        assert "maximum context length is 20 tokens" in error["message"]
        assert "21 tokens (10 in the messages, 11 in the completion)" in error["message"]
        assert client.post(url, json=chat(False, max_tokens=10)).status_code == 200
        clipped = client.post(url, json=chat(False)).json()
        assert clipped["usage"]["completion_tokens"] == 20 - PROMPT_TOKENS
        long = [{"role": "user", "content": "word " * 20}]
        assert client.post(url, json=chat(messages=long)).status_code == 400


def test_prefix_cache_over_http(client: httpx.Client) -> None:
    config = LabConfig(latency=FAST, prefix_cache=True)
    messages = [{"role": "user", "content": "word " * 60}]
    body = chat(max_tokens=1, messages=messages, stream_options={"include_usage": True})
    with LabServer(config) as lab:
        url = f"{lab.base_url}/chat/completions"
        first, second = (client.post(url, json=body) for _ in range(2))
        document = client.post(url, json={**body, "stream": False}).json()
    assert first.headers["x-lab-cached-tokens"] == "0"
    assert second.headers["x-lab-cached-tokens"] == "64"
    usage = json.loads(events(iter(second.text.splitlines()))[-2])
    assert usage["usage"]["prompt_tokens"] == 67
    assert usage["usage"]["prompt_tokens_details"] == {"cached_tokens": 64}
    assert usage["lab"]["cached_tokens"] == 64
    assert document["usage"]["prompt_tokens_details"] == {"cached_tokens": 64}
    assert document["lab"]["cached_tokens"] == 64


def test_slots_report_who_was_there_at_arrival() -> None:
    latency = LatencyModel(prefill_base_ms=30, prefill_ms_per_token=0, decode_ms_per_token=1)

    async def three(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=5) as http:
            tasks = []
            for _ in range(3):
                tasks.append(asyncio.create_task(http.post(url, json=chat(max_tokens=2))))
                await asyncio.sleep(0.005)
            return await asyncio.gather(*tasks)

    with LabServer(LabConfig(latency=latency, slots=1)) as lab:
        responses = asyncio.run(three(f"{lab.base_url}/chat/completions"))
    busy = [r.headers["x-lab-slots-busy"] for r in responses]
    ahead = [r.headers["x-lab-queue-ahead"] for r in responses]
    assert (busy, ahead) == (["0", "1", "1"], ["0", "0", "1"])
    queues = [server_timing(r)["queue"] for r in responses]
    # Each behind one more: how long depends on when the client's sends arrived, which a
    # busy machine spreads (the second waited 31 ms on a quiet one, 18 ms beside a hog).
    assert queues[0] == 0
    assert 0 < queues[1] < queues[2]
    truth = [json.loads(events(iter(r.text.splitlines()))[-2])["lab"] for r in responses]
    assert [t["queue_ms"] for t in truth] == pytest.approx(queues, abs=0.001)


def test_load_profile_is_reported() -> None:
    config = LabConfig(latency=FAST, slots=4, load_profile=(0.25,), background_request_ms=5)
    with LabServer(config) as lab, httpx.Client(timeout=5) as http:
        response = http.post(f"{lab.base_url}/chat/completions", json=chat(max_tokens=1))
    assert response.headers["x-lab-load"] == "0.250"
    assert 'load;desc="0.250"' in response.headers["server-timing"]
    assert json.loads(events(iter(response.text.splitlines()))[-2])["lab"]["load"] == 0.25


def test_stall_rate_is_seeded(client: httpx.Client) -> None:
    config = LabConfig(latency=FAST, stall_after_token=1, stall_ms=1, stall_rate=0.5, seed=3)
    runs = []
    for _ in range(2):
        with LabServer(config) as lab:
            url = f"{lab.base_url}/chat/completions"
            timings = [client.post(url, json=chat(max_tokens=2)) for _ in range(12)]
            runs.append(["stall" in r.headers["server-timing"] for r in timings])
            assert (
                client.post(url, json=chat(max_tokens=1)).headers["server-timing"].count("stall")
                == 0
            )
    assert runs[0] == runs[1]
    assert 0 < sum(runs[0]) < 12


def test_stall_and_kv_in_a_document(client: httpx.Client) -> None:
    latency = LatencyModel(
        prefill_base_ms=5,
        prefill_ms_per_token=0,
        decode_ms_per_token=2,
        kv_threshold_tokens=PROMPT_TOKENS + 4,
        kv_penalty=5,
    )
    config = LabConfig(latency=latency, stall_after_token=2, stall_ms=40)
    with LabServer(config) as lab:
        started = time.perf_counter()
        document = client.post(f"{lab.base_url}/chat/completions", json=chat(False, max_tokens=8))
        elapsed_ms = (time.perf_counter() - started) * 1000
    truth = document.json()["lab"]
    assert truth["kv_slow_from_token"] == 5
    assert truth["decode_ms"] == pytest.approx(4 * 2 + 3 * 10)
    assert truth["stall_ms"] == 40
    assert elapsed_ms >= 5 + 38 + 40


@pytest.mark.parametrize("fault", ["truncate", "malformed"])
def test_document_faults_are_not_json(client: httpx.Client, fault: str) -> None:
    with LabServer(LabConfig(latency=FAST)) as lab:
        response = client.post(
            f"{lab.base_url}/chat/completions",
            json=chat(False, max_tokens=3),
            headers={"x-lab-fault": fault},
        )
    assert response.status_code == 200
    assert response.headers["x-lab-fault"] == fault
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)


def test_document_reset(client: httpx.Client) -> None:
    with LabServer(LabConfig(latency=FAST, fault=Fault.RESET)) as lab:
        with pytest.raises(httpx.TransportError):
            client.post(f"{lab.base_url}/chat/completions", json=chat(False, max_tokens=3))
        assert lab.app is not None
        deadline = time.monotonic() + 1
        while in_flight(lab.app) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert in_flight(lab.app) == 0


def test_the_write_log_is_the_labs_own_account_of_each_streams_token_writes(
    tmp_path: Any,
) -> None:
    """A line per stream as it ends: its X-Request-ID and a stamp after each token's write,
    in order; each token is read after the one before it was written."""
    log = tmp_path / "writes.jsonl"
    latency = LatencyModel(prefill_base_ms=2.0, prefill_ms_per_token=0.0, decode_ms_per_token=5.0)
    config = LabConfig(latency=latency, write_log=str(log))
    read_ns: dict[str, list[int]] = {}
    with LabProcess(config) as lab, httpx.Client(timeout=10) as http:
        for n, tokens in enumerate((3, 6)):
            request_id = f"req-{n}"
            arrivals = read_ns.setdefault(request_id, [])
            headers = {"x-request-id": request_id}
            body = chat(max_tokens=tokens)
            with http.stream("POST", f"{lab.base_url}/chat/completions", json=body,
                             headers=headers) as response:  # fmt: skip
                for line in response.iter_lines():
                    if re.search(r'"content":"[^"]', line):
                        arrivals.append(time.perf_counter_ns())
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["request_id"] for r in rows] == ["req-0", "req-1"]
    for row in rows:
        writes, reads = row["writes_ns"], read_ns[row["request_id"]]
        assert len(writes) == len(reads) == (3 if row["request_id"] == "req-0" else 6)
        # The stamp follows its write, so this client may read a token before it; but
        # never before the token ahead of it was written.
        assert all(w < r for w, r in zip(writes, reads[1:], strict=False))
        # In the order written. (Their gaps follow the lab's schedule, which a busy
        # machine delays and the lab then catches up on, so no gap is fixed here.)
        assert writes == sorted(set(writes))
