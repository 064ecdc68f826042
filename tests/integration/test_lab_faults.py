"""Each fault the lab injects reaches the probe as its typed error, and the run goes on.

The real :class:`ProbeSession` is driven against a real :class:`LabServer`; the
faulted request picks its fault with the ``x-lab-fault`` header, and the next
request on the same session (no header) must succeed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from latdoc import Endpoint, ErrorKind, Phase, ProbeSession, RequestTrace, Timeouts
from latdoc.lab.sim import Fault, LabConfig, LabServer, LatencyModel, in_flight

LATENCY = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.0, decode_ms_per_token=5.0)
CONFIG = LabConfig(latency=LATENCY, fault_after_tokens=3, drip_interval_ms=0.3, hang_s=5.0)
MAX_TOKENS = 8


def _faulted_then_ok(
    server: LabServer,
    fault: Fault,
    timeouts: Timeouts,
    *,
    http2: bool = False,
    max_tokens: int = MAX_TOKENS,
) -> tuple[RequestTrace, RequestTrace]:
    async def go() -> tuple[RequestTrace, RequestTrace]:
        endpoint = Endpoint(server.base_url, "lab-sim")
        session = ProbeSession(endpoint, cacert=server.ca_file, http2=http2, timeouts=timeouts)
        async with session:
            faulted = await session.request(
                "Hello, lab", max_tokens, headers={"x-lab-fault": str(fault)}
            )
            after = await session.request("Hello, lab", max_tokens)
        return faulted, after

    return asyncio.run(go())


@pytest.fixture(scope="module")
def server() -> Iterator[LabServer]:
    with LabServer(CONFIG) as lab:
        yield lab


def _assert_recovered(after: RequestTrace, max_tokens: int = MAX_TOKENS) -> None:
    assert after.error is None, after.error
    assert after.finish_reason == "length"
    assert after.output_tokens == max_tokens


@pytest.mark.parametrize(
    ("fault", "status", "needle"),
    [
        (Fault.RATE_LIMIT, 429, "Retry-After: 1"),
        (Fault.SERVER_ERROR, 500, "server had an error"),
        (Fault.UNAVAILABLE, 503, "overloaded"),
        (Fault.HTML, 502, "502 Bad Gateway"),
    ],
)
def test_error_statuses(server: LabServer, fault: Fault, status: int, needle: str) -> None:
    faulted, after = _faulted_then_ok(server, fault, Timeouts(total=5))
    assert faulted.error is not None
    assert faulted.error.code == f"http:{status}"
    assert faulted.error.phase is Phase.WAIT
    assert needle in faulted.error.message
    assert faulted.chunks == ()
    _assert_recovered(after)


def test_html_page_is_not_json(server: LabServer) -> None:
    response = httpx.post(
        f"{server.base_url}/chat/completions",
        json={"model": "lab-sim", "messages": [{"role": "user", "content": "hi"}]},
        headers={"x-lab-fault": "html"},
    )
    assert response.status_code == 502
    assert response.headers["content-type"] == "text/html"
    assert "<title>502 Bad Gateway</title>" in response.text


@pytest.mark.parametrize(("tls", "http2"), [(False, False), (True, True)])
def test_reset_breaks_the_stream_with_a_real_rst(tls: bool, http2: bool) -> None:
    with LabServer(CONFIG, tls=tls, http2=http2) as lab:
        faulted, after = _faulted_then_ok(lab, Fault.RESET, Timeouts(total=5), http2=http2)
        assert lab.app is not None
        deadline = time.monotonic() + 1
        while in_flight(lab.app) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert in_flight(lab.app) == 0
    assert faulted.error is not None
    assert (faulted.error.kind, faulted.error.phase) == (ErrorKind.STREAM_BROKEN, Phase.STREAM)
    assert "reset" in faulted.error.message
    assert len(faulted.chunks) == CONFIG.fault_after_tokens
    _assert_recovered(after)
    assert after.new_connection is True


def test_truncate_ends_cleanly_without_done(server: LabServer) -> None:
    faulted, after = _faulted_then_ok(server, Fault.TRUNCATE, Timeouts(total=5))
    assert faulted.error is not None
    assert (faulted.error.kind, faulted.error.phase) == (ErrorKind.STREAM_BROKEN, Phase.STREAM)
    assert "[DONE]" in faulted.error.message
    assert len(faulted.chunks) == CONFIG.fault_after_tokens
    assert faulted.finish_reason is None
    _assert_recovered(after)
    assert after.new_connection is False


def test_malformed_event(server: LabServer) -> None:
    faulted, after = _faulted_then_ok(server, Fault.MALFORMED, Timeouts(total=5))
    assert faulted.error is not None
    assert (faulted.error.kind, faulted.error.phase) == (ErrorKind.MALFORMED, Phase.STREAM)
    assert "not valid JSON" in faulted.error.message
    assert len(faulted.chunks) == CONFIG.fault_after_tokens
    _assert_recovered(after)


def test_drip_succeeds_slowly_under_a_read_timeout(server: LabServer) -> None:
    """Every byte comes well within the read timeout: the request succeeds, slowly.

    The same answer undripped takes about 15 ms; dripped, each of its ~1,000 body
    bytes waits at least 0.3 ms.
    """
    timeouts = Timeouts(read=0.2, total=10)
    faulted, after = _faulted_then_ok(server, Fault.DRIP, timeouts, max_tokens=2)
    assert faulted.error is None, faulted.error
    assert faulted.output_tokens == 2
    _assert_recovered(after, 2)
    assert faulted.total_ms is not None and after.total_ms is not None
    assert faulted.total_ms > 300
    assert faulted.total_ms > 5 * after.total_ms


def test_drip_sends_one_byte_at_a_time(server: LabServer) -> None:
    body = {"model": "lab-sim", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    with httpx.Client(timeout=5) as http:
        url = f"{server.base_url}/chat/completions"
        none = {"x-lab-fault": "none"}
        plain = http.post(url, json={**body, "stream": True}, headers=none).content
        with http.stream(
            "POST", url, json={**body, "stream": True}, headers={"x-lab-fault": "drip"}
        ) as response:
            assert response.headers["x-lab-fault"] == "drip"
            pieces = list(response.iter_raw())
    dripped = b"".join(pieces)
    assert dripped.endswith(b"data: [DONE]\n\n")
    assert abs(len(dripped) - len(plain)) <= 10
    assert len(pieces) >= len(dripped) // 4


def test_drip_times_out_under_a_total_timeout(server: LabServer) -> None:
    faulted, after = _faulted_then_ok(server, Fault.DRIP, Timeouts(read=0.2, total=0.15))
    assert faulted.error is not None
    assert faulted.error.kind is ErrorKind.TIMEOUT
    assert faulted.error.phase in (Phase.FIRST_TOKEN, Phase.STREAM)
    assert "0.15 s" in faulted.error.message
    _assert_recovered(after)


def test_hang_times_out_waiting_and_the_server_lets_go(server: LabServer) -> None:
    started = time.monotonic()
    faulted, after = _faulted_then_ok(server, Fault.HANG, Timeouts(read=0.3, total=5))
    assert time.monotonic() - started < 2
    assert faulted.error is not None
    assert faulted.error.code == "timeout:wait"
    assert faulted.first_byte_ns is None
    _assert_recovered(after)
    assert server.app is not None
    deadline = time.monotonic() + 1
    while in_flight(server.app) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert in_flight(server.app) == 0


def test_hang_is_bounded_by_the_server() -> None:
    with LabServer(LabConfig(latency=LATENCY, fault=Fault.HANG, hang_s=0.2)) as lab:
        started = time.monotonic()
        response = httpx.post(
            f"{lab.base_url}/chat/completions",
            json={"model": "lab-sim", "messages": [{"role": "user", "content": "hi"}]},
            timeout=5,
        )
        waited = time.monotonic() - started
    assert response.status_code == 504
    assert response.headers["x-lab-fault"] == "hang"
    assert 0.2 <= waited < 1.5


def test_configured_fault_rate_is_seeded_and_the_header_overrides_it() -> None:
    config = LabConfig(latency=LATENCY, fault=Fault.UNAVAILABLE, fault_rate=0.5, seed=11)
    runs: list[list[int]] = []
    body = {"model": "lab-sim", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    for _ in range(2):
        with LabServer(config) as lab, httpx.Client(timeout=5) as http:
            url = f"{lab.base_url}/chat/completions"
            runs.append([http.post(url, json=body).status_code for _ in range(20)])
            forced = http.post(url, json=body, headers={"x-lab-fault": "none"})
            assert forced.status_code == 200
            other = http.post(url, json=body, headers={"x-lab-fault": "429"})
            assert other.status_code == 429
            assert other.headers["retry-after"] == "1"
            unknown = http.post(url, json=body, headers={"x-lab-fault": "gremlins"})
            assert unknown.status_code == 400
            assert "x-lab-fault" in unknown.json()["error"]["message"]
    assert runs[0] == runs[1]
    assert set(runs[0]) == {200, 503}
    assert 4 <= runs[0].count(503) <= 16
