"""``latdoc.client`` against real servers: every lab fault gets the right retry decision.

The proof of a decision is the server's own count of the requests it received
(:func:`requests_received` for the lab, ``ScriptedServer.requests`` for the
statuses the lab cannot produce), never the client's word. Timing claims
(``Retry-After``, a stalled stream failing after the gap) are measured.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable, Iterator, Sequence

import httpx
import openai
import pytest

from conftest import FAST, LabFactory
from latdoc.client import (
    BaseRespError,
    FailureClass,
    FirstTokenTimeout,
    PhaseTimeouts,
    RetryBudget,
    RetryDecision,
    RetryPolicy,
    StreamStalled,
    StreamTruncated,
    TotalTimeout,
    make_async_client,
    make_client,
)
from latdoc.lab.sim import Fault, LabConfig, LabServer, LatencyModel, requests_received
from scripted_server import ScriptedServer, Step, sse_response
from unit.client.test_client import CONFIG

QUICK = RetryPolicy(
    max_attempts=3,
    connect_base_s=0.01,
    connect_cap_s=0.02,
    server_base_s=0.01,
    server_cap_s=0.02,
    budget=None,
)


BODY = {
    "model": "lab-sim",
    "messages": [{"role": "user", "content": "Hello, lab"}],
    "max_tokens": 8,
    "stream": True,
}


@pytest.fixture(scope="module")
def server() -> Iterator[LabServer]:
    with LabServer(CONFIG) as lab:
        yield lab


def _count(server: LabServer) -> int:
    assert server.app is not None
    return requests_received(server.app)


class Stream:
    """One streamed request through a tuned client: its response, its decisions, its error."""

    def __init__(self) -> None:
        self.decisions: list[RetryDecision] = []
        self.status: int | None = None
        self.body = b""
        self.error: BaseException | None = None
        self.elapsed = 0.0


def _stream(
    base_url: str,
    *,
    policy: RetryPolicy = QUICK,
    timeouts: PhaseTimeouts | None = None,
    headers: dict[str, str] | None = None,
    body: dict[str, object] | None = None,
) -> Stream:
    out = Stream()
    client = make_client(timeouts=timeouts, retry=policy, on_retry=out.decisions.append)
    started = time.monotonic()
    with client:
        try:
            with client.stream(
                "POST", f"{base_url}/chat/completions", json=body or BODY, headers=headers
            ) as response:
                out.status = response.status_code
                for chunk in response.iter_bytes():
                    out.body += chunk
        except httpx.HTTPError as exc:
            out.error = exc
    out.elapsed = time.monotonic() - started
    return out


def _actions(stream: Stream) -> list[tuple[FailureClass, bool]]:
    return [(d.failure, d.retry) for d in stream.decisions]


@pytest.mark.parametrize(
    ("fault", "status"),
    [(Fault.SERVER_ERROR, 500), (Fault.UNAVAILABLE, 503), (Fault.HTML, 502)],
)
def test_server_errors_are_retried_until_max_attempts(
    server: LabServer, fault: Fault, status: int
) -> None:
    before = _count(server)
    out = _stream(server.base_url, headers={"x-lab-fault": str(fault)})
    assert _count(server) - before == 3
    assert out.status == status
    assert out.error is None
    server_class = FailureClass.SERVER
    assert _actions(out) == [(server_class, True), (server_class, True), (server_class, False)]
    assert "max_attempts=3" in out.decisions[-1].reason


def test_rate_limit_waits_retry_after_seconds(server: LabServer) -> None:
    policy = RetryPolicy(max_attempts=2, budget=None)
    before = _count(server)
    out = _stream(server.base_url, policy=policy, headers={"x-lab-fault": "429"})
    assert _count(server) - before == 2
    assert out.status == 429
    assert out.decisions[0].wait_s == 1.0
    assert out.decisions[0].failure is FailureClass.RATE_LIMIT
    assert out.elapsed >= 1.0


def test_hang_fails_after_first_token_and_is_retried(server: LabServer) -> None:
    timeouts = PhaseTimeouts(first_token=0.3, total=10)
    before = _count(server)
    out = _stream(server.base_url, timeouts=timeouts, headers={"x-lab-fault": "hang"})
    assert isinstance(out.error, FirstTokenTimeout)
    assert _actions(out) == [(FailureClass.TIMEOUT, True)] * 2 + [(FailureClass.TIMEOUT, False)]
    assert 0.9 <= out.elapsed < 3.0
    deadline = time.monotonic() + 2
    while _count(server) - before < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _count(server) - before == 3


def test_reset_after_the_first_token_is_never_replayed(server: LabServer) -> None:
    before = _count(server)
    out = _stream(server.base_url, headers={"x-lab-fault": "reset"})
    assert out.status == 200
    assert isinstance(out.error, httpx.TransportError)
    # the role chunk, then the tokens before the fault
    assert out.body.count(b"data: {") == 1 + CONFIG.fault_after_tokens
    assert _count(server) - before == 1
    assert _actions(out) == [(FailureClass.STREAM, False)]
    assert "never replayed" in out.decisions[0].reason


def test_truncation_is_raised_and_never_replayed(server: LabServer) -> None:
    before = _count(server)
    out = _stream(server.base_url, headers={"x-lab-fault": "truncate"})
    assert isinstance(out.error, StreamTruncated)
    assert isinstance(out.error, httpx.RemoteProtocolError)
    assert _count(server) - before == 1
    assert _actions(out) == [(FailureClass.STREAM, False)]


def test_malformed_event_and_drip_are_not_retried(server: LabServer) -> None:
    before = _count(server)
    malformed = _stream(server.base_url, headers={"x-lab-fault": "malformed"})
    drip = _stream(
        server.base_url,
        timeouts=PhaseTimeouts(between_chunks=0.5),
        headers={"x-lab-fault": "drip"},
    )
    assert _count(server) - before == 2
    for out in (malformed, drip):
        assert out.error is None
        assert out.status == 200
        assert out.decisions == []
        assert out.body.rstrip().endswith(b"data: [DONE]")


def test_401_is_sent_once(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, api_key="right")) as server:
        out = _stream(server.base_url, headers={"authorization": "Bearer wrong"})
        assert _count(server) == 1
    assert out.status == 401
    assert _actions(out) == [(FailureClass.CLIENT, False)]


def test_404_unknown_model_is_sent_once(server: LabServer) -> None:
    before = _count(server)
    out = _stream(server.base_url, body={**BODY, "model": "no-such-model"})
    assert out.status == 404
    assert _count(server) - before == 1
    assert _actions(out) == [(FailureClass.CLIENT, False)]


def _json_status(status: str, headers: str = "") -> list[Step]:
    body = b'{"error": {"message": "scripted"}}'
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{headers}"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode()
    return [head, body]


OK_STREAM = sse_response([b'data: {"choices": []}\n\n', b"data: [DONE]\n\n"])


def _then_ok(first: list[Step], arrivals: list[float]) -> Callable[[bytes], Sequence[Step]]:
    def script(request: bytes) -> Sequence[Step]:
        arrivals.append(time.monotonic())
        return first if len(arrivals) == 1 else OK_STREAM

    return script


@pytest.mark.parametrize(
    ("status", "sent"),
    [("529 Overloaded", 3), ("403 Forbidden", 1), ("401 Unauthorized", 1), ("404 Not Found", 1)],
)
def test_scripted_statuses(status: str, sent: int) -> None:
    with ScriptedServer(_json_status(status)) as srv:
        out = _stream(srv.base_url)
        assert len(srv.requests) == sent
    assert out.status == int(status.split()[0])
    expected = FailureClass.SERVER if sent > 1 else FailureClass.CLIENT
    assert {d.failure for d in out.decisions} == {expected}


def test_retry_after_http_date_is_respected() -> None:
    arrivals: list[float] = []
    when = email.utils.formatdate(time.time() + 2, usegmt=True)
    first = _json_status("429 Too Many Requests", f"retry-after: {when}\r\n")
    with ScriptedServer(_then_ok(first, arrivals)) as srv:
        out = _stream(srv.base_url, policy=RetryPolicy(max_attempts=2, budget=None))
    assert out.status == 200
    assert len(arrivals) == 2
    wait = out.decisions[0].wait_s
    assert wait is not None and 0.9 < wait <= 2.0
    assert arrivals[1] - arrivals[0] >= wait


def test_server_retry_after_on_503_then_success() -> None:
    arrivals: list[float] = []
    first = _json_status("503 Service Unavailable", "retry-after: 0.2\r\n")
    with ScriptedServer(_then_ok(first, arrivals)) as srv:
        out = _stream(srv.base_url)
    assert (out.status, out.error, len(arrivals)) == (200, None, 2)
    assert out.decisions[0].wait_s == 0.2
    assert arrivals[1] - arrivals[0] >= 0.2


def test_reset_before_any_response_is_retried() -> None:
    arrivals: list[float] = []
    with ScriptedServer(_then_ok(["reset"], arrivals)) as srv:
        out = _stream(srv.base_url)
    assert (out.status, out.error, len(arrivals)) == (200, None, 2)
    assert _actions(out) == [(FailureClass.CONNECTION, True)]


def test_connect_refused_is_retried_then_raised() -> None:
    with ScriptedServer([]) as srv:
        url = srv.base_url
    out = _stream(url)
    assert isinstance(out.error, httpx.ConnectError)
    assert _actions(out) == [(FailureClass.CONNECTION, True)] * 2 + [
        (FailureClass.CONNECTION, False)
    ]


def test_budget_bounds_retries_across_requests() -> None:
    policy = RetryPolicy(
        max_attempts=5, server_base_s=0.01, server_cap_s=0.01, budget=RetryBudget(0.0, 2.0)
    )
    with ScriptedServer(_json_status("500 Internal Server Error")) as srv:
        first = _stream(srv.base_url, policy=policy)
        second = _stream(srv.base_url, policy=policy)
        assert len(srv.requests) == 3 + 1
    assert "budget" in first.decisions[-1].reason
    assert _actions(second) == [(FailureClass.SERVER, False)]


def test_deadline_bounds_waits() -> None:
    policy = RetryPolicy(max_attempts=10, deadline_s=0.5, budget=None)
    first = _json_status("503 Service Unavailable", "retry-after: 0.3\r\n")
    with ScriptedServer(first) as srv:
        out = _stream(srv.base_url, policy=policy)
        assert len(srv.requests) == 2
    assert "deadline_s=0.5" in out.decisions[-1].reason
    assert out.elapsed < 1.0


def test_a_wait_longer_than_allowed_is_not_waited() -> None:
    policy = RetryPolicy(max_retry_after_s=5, budget=None)
    with ScriptedServer(_json_status("429 Too Many Requests", "retry-after: 3600\r\n")) as srv:
        out = _stream(srv.base_url, policy=policy)
        assert len(srv.requests) == 1
    assert out.status == 429
    assert "3600" in out.decisions[0].reason


STALL = LabConfig(latency=FAST, stall_after_token=2, stall_ms=3000.0)


def test_a_stalled_stream_fails_after_the_gap_not_the_total(lab: LabFactory) -> None:
    timeouts = PhaseTimeouts(first_token=5, between_chunks=0.3, total=30)
    with lab(STALL) as server:
        out = _stream(server.base_url, timeouts=timeouts)
        assert _count(server) == 1
    assert isinstance(out.error, StreamStalled)
    assert isinstance(out.error, httpx.ReadTimeout)
    assert out.body.count(b"data: {") == 1 + 2
    assert 0.3 <= out.elapsed < 1.5
    assert _actions(out) == [(FailureClass.STREAM, False)]


def test_a_stalled_stream_fails_after_the_gap_async(lab: LabFactory) -> None:
    timeouts = PhaseTimeouts(first_token=5, between_chunks=0.3, total=30)

    async def go(url: str) -> tuple[BaseException | None, float]:
        async with make_async_client(timeouts=timeouts) as client:
            started = time.monotonic()
            try:
                async with client.stream("POST", f"{url}/chat/completions", json=BODY) as r:
                    async for _ in r.aiter_bytes():
                        pass
            except httpx.HTTPError as exc:
                return exc, time.monotonic() - started
        return None, time.monotonic() - started

    with lab(STALL) as server:
        error, elapsed = asyncio.run(go(server.base_url))
    assert isinstance(error, StreamStalled)
    assert 0.3 <= elapsed < 1.5


def test_the_total_limit_ends_a_slow_stream(lab: LabFactory) -> None:
    slow = LabConfig(latency=LatencyModel(prefill_base_ms=5.0, decode_ms_per_token=100.0))
    timeouts = PhaseTimeouts(between_chunks=1.0, total=0.5)
    with lab(slow) as server:
        out = _stream(server.base_url, timeouts=timeouts, body={**BODY, "max_tokens": 30})
    assert isinstance(out.error, TotalTimeout)
    assert 0.5 <= out.elapsed < 1.5


def test_a_slow_first_token_within_limits_passes(lab: LabFactory) -> None:
    slow = LabConfig(latency=LatencyModel(prefill_base_ms=400.0, decode_ms_per_token=1.0))
    timeouts = PhaseTimeouts(first_token=2.0, between_chunks=0.2)
    with lab(slow) as server:
        out = _stream(server.base_url, timeouts=timeouts)
    assert (out.status, out.error) == (200, None)


def test_openai_async_streams_through_the_tuned_client(server: LabServer) -> None:
    async def go() -> str:
        http_client = make_async_client(concurrency=4, retry=QUICK)
        client = openai.AsyncOpenAI(
            base_url=server.base_url, api_key="x", http_client=http_client, max_retries=0
        )
        async with client:
            stream = await client.chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "Hello, lab"}],
                max_tokens=6,
                stream=True,
            )
            parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        return "".join(parts)

    assert len(asyncio.run(go()).split()) >= 1


def test_openai_sync_with_retries_on_a_server_error(server: LabServer) -> None:
    decisions: list[RetryDecision] = []
    http_client = make_client(retry=QUICK, on_retry=decisions.append)
    client = openai.OpenAI(
        base_url=server.base_url, api_key="x", http_client=http_client, max_retries=0
    )
    with client:
        before = _count(server)
        answer = client.chat.completions.create(
            model="lab-sim", messages=[{"role": "user", "content": "Hi"}], max_tokens=4
        )
        assert answer.choices[0].message.content
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "Hi"}],
                max_tokens=4,
                extra_headers={"x-lab-fault": "500"},
            )
        assert _count(server) - before == 1 + 3
    assert [d.retry for d in decisions] == [True, True, False]


def test_openai_stream_stall_surfaces_as_our_timeout(lab: LabFactory) -> None:
    http_client = make_client(timeouts=PhaseTimeouts(between_chunks=0.3))
    with lab(STALL) as server:
        client = openai.OpenAI(
            base_url=server.base_url, api_key="x", http_client=http_client, max_retries=0
        )
        started = time.monotonic()
        with client:
            stream = client.chat.completions.create(
                model="lab-sim", messages=[{"role": "user", "content": "Hi"}], stream=True
            )
            with pytest.raises(openai.APITimeoutError) as info:
                list(stream)
        assert isinstance(info.value.__cause__, StreamStalled)
        assert time.monotonic() - started < 1.5


def test_responses_are_json(server: LabServer) -> None:
    with make_client() as client:
        response = client.post(
            f"{server.base_url}/chat/completions", json={**BODY, "stream": False}
        )
    assert json.loads(response.text)["choices"]


def test_a_slow_first_token_after_early_headers_is_a_first_token_timeout(
    lab: LabFactory,
) -> None:
    slow = LabConfig(latency=LatencyModel(prefill_base_ms=2000.0, decode_ms_per_token=1.0))
    timeouts = PhaseTimeouts(first_token=0.4, between_chunks=5.0)
    with lab(slow) as server:
        out = _stream(server.base_url, timeouts=timeouts)
        assert _count(server) == 1
    # The headers and the role-only event came at once: the stream had begun.
    assert out.status == 200
    assert isinstance(out.error, FirstTokenTimeout)
    assert 0.4 <= out.elapsed < 1.5
    assert _actions(out) == [(FailureClass.STREAM, False)]


def test_reset_before_the_first_token_after_headers_is_not_replayed(lab: LabFactory) -> None:
    config = LabConfig(latency=FAST, fault_after_tokens=0)
    with lab(config) as server:
        out = _stream(server.base_url, headers={"x-lab-fault": "reset"})
        assert _count(server) == 1
    assert out.status == 200
    assert isinstance(out.error, httpx.TransportError)
    assert b'"content":"' not in out.body.replace(b'"content":""', b"")
    assert _actions(out) == [(FailureClass.STREAM, False)]


def test_openai_async_over_http2_with_tls(lab: LabFactory) -> None:
    async def go(server: LabServer) -> tuple[str, str]:
        assert server.ca_file is not None
        http_client = make_async_client(http2=True, verify=server.ca_file, retry=QUICK)
        client = openai.AsyncOpenAI(
            base_url=server.base_url, api_key="x", http_client=http_client, max_retries=0
        )
        async with client:
            raw = await client.chat.completions.with_raw_response.create(
                model="lab-sim", messages=[{"role": "user", "content": "Hi"}], max_tokens=3
            )
            answer = raw.parse()
        return raw.http_response.http_version, answer.choices[0].message.content or ""

    with lab(tls=True, http2=True) as server:
        version, text = asyncio.run(go(server))
    assert version == "HTTP/2"
    assert text


def test_injected_sleep_and_draw_make_backoff_exact() -> None:
    from latdoc.client import RetryTransport, TimeoutTransport

    slept: list[float] = []
    policy = RetryPolicy(
        max_attempts=4, server_base_s=0.5, server_cap_s=1.5, deadline_s=None, budget=None
    )
    with ScriptedServer(_json_status("500 Internal Server Error")) as srv:
        inner = TimeoutTransport(httpx.HTTPTransport(), PhaseTimeouts())
        transport = RetryTransport(inner, policy, sleep=slept.append, draw=lambda: 0.5)
        with httpx.Client(transport=transport) as client:
            response = client.post(f"{srv.base_url}/chat/completions", json=BODY)
        assert len(srv.requests) == 4
    assert response.status_code == 500
    assert slept == [0.25, 0.5, 0.75]


def test_async_retries_a_rate_limit_then_streams() -> None:
    arrivals: list[float] = []
    first = _json_status("429 Too Many Requests", "retry-after-ms: 300\r\n")
    decisions: list[RetryDecision] = []

    async def go(url: str) -> bytes:
        client = make_async_client(retry=QUICK, on_retry=decisions.append)
        async with client, client.stream("POST", f"{url}/chat/completions", json=BODY) as r:
            return b"".join([chunk async for chunk in r.aiter_bytes()])

    with ScriptedServer(_then_ok(first, arrivals)) as srv:
        body = asyncio.run(go(srv.base_url))
    assert body.endswith(b"data: [DONE]\n\n")
    assert len(arrivals) == 2
    assert arrivals[1] - arrivals[0] >= 0.3
    assert [(d.failure, d.wait_s) for d in decisions] == [(FailureClass.RATE_LIMIT, 0.3)]


def test_a_callers_read_timeout_caps_every_attempt(server: LabServer) -> None:
    decisions: list[RetryDecision] = []
    client = make_client(retry=QUICK, on_retry=decisions.append)
    started = time.monotonic()
    with client, pytest.raises(httpx.ReadTimeout) as info:
        client.post(
            f"{server.base_url}/chat/completions",
            json={**BODY, "stream": False},
            headers={"x-lab-fault": "hang"},
            timeout=httpx.Timeout(5.0, read=0.2),
        )
    assert "read timeout of 0.2 s" in str(info.value)
    assert [d.failure for d in decisions] == [FailureClass.TIMEOUT] * 3
    assert 0.6 <= time.monotonic() - started < 2.0


def _answer(server: LabServer, headers: dict[str, str] | None = None) -> Stream:
    """One request for a whole JSON answer (not streamed) through a tuned client."""
    out = Stream()
    with make_client(retry=QUICK, on_retry=out.decisions.append) as client:
        try:
            response = client.post(
                f"{server.base_url}/chat/completions",
                json={**BODY, "stream": False},
                headers=headers,
            )
            out.status, out.body = response.status_code, response.content
        except httpx.HTTPError as exc:
            out.error = exc
    return out


@pytest.mark.parametrize(
    ("code", "failure"), [(1002, FailureClass.RATE_LIMIT), (1000, FailureClass.SERVER)]
)
def test_a_base_resp_rate_limit_or_server_error_sent_with_200_is_retried_then_raised(
    lab: LabFactory, code: int, failure: FailureClass
) -> None:
    """MiniMax's errors come with HTTP 200 in ``base_resp``: the policy sees the status
    each code stands for (1002 a 429, 1000 a 500) and retries it, as the probe classes it."""
    with lab(LabConfig(latency=FAST, base_resp_code=code)) as server:
        out = _answer(server, {"x-lab-fault": str(Fault.BASE_RESP)})
        assert _count(server) == 3
    assert _actions(out) == [(failure, True), (failure, True), (failure, False)]
    assert isinstance(out.error, BaseRespError)
    assert out.error.code == code and f"base_resp {code}" in str(out.error)


def test_a_base_resp_refusing_the_key_is_sent_once_and_raised(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, base_resp_code=1004)) as server:
        out = _answer(server, {"x-lab-fault": str(Fault.BASE_RESP)})
        assert _count(server) == 1
    assert _actions(out) == [(FailureClass.CLIENT, False)]
    assert isinstance(out.error, BaseRespError) and out.error.status == 401


def test_a_base_resp_error_once_is_retried_and_the_answer_read_whole(lab: LabFactory) -> None:
    """The body read to look for ``base_resp`` goes back to the caller whole."""
    config = LabConfig(latency=FAST, fault=Fault.BASE_RESP, fault_rate=0.5, seed=1)
    with lab(config) as server:
        outs = [_answer(server) for _ in range(6)]
    retried = [out for out in outs if out.decisions and out.error is None]
    assert retried, [_actions(out) for out in outs]
    for out in retried:
        assert out.status == 200
        answer = json.loads(out.body)
        assert answer["choices"][0]["message"]["content"]
        assert "base_resp" not in answer or answer["base_resp"]["status_code"] == 0


def test_openai_raises_a_refused_key_sent_with_200(lab: LabFactory) -> None:
    """The SDK, which would parse the 200 as an answer without choices, hands the
    client's error on as it is."""
    with lab(LabConfig(latency=FAST, base_resp_code=1004)) as server:
        client = openai.OpenAI(
            base_url=server.base_url,
            api_key="k",
            max_retries=0,
            http_client=make_client(retry=QUICK),
        )
        with pytest.raises(BaseRespError) as raised:
            client.chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=4,
                extra_headers={"x-lab-fault": str(Fault.BASE_RESP)},
            )
        assert _count(server) == 1
    assert raised.value.status == 401
