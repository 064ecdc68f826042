"""Every way a request can fail gives a typed error naming its phase, and the run goes on."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import time
from collections.abc import Sequence

import pytest

from conftest import LabFactory
from latdoc import (
    Endpoint,
    ErrorKind,
    Phase,
    ProbePlan,
    ProbeSession,
    RequestTrace,
    Timeouts,
    run_probe,
)
from latdoc.lab.sim import LabConfig
from machine_noise import MachineNoise
from scripted_server import ScriptedServer, Step, chunk, plain_response, sse_response
from unit.probe.test_probe_errors import SECRET, _one

GOOD_EVENTS = [
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}\n\n',
    b"data: [DONE]\n\n",
]


def _scripted(script: Sequence[Step], **options: object) -> RequestTrace:
    with ScriptedServer(script) as server:
        return _one(server.base_url, **options)


def test_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        trace = _one(f"http://127.0.0.1:{port}/v1")
    assert trace.error is not None
    assert (trace.error.kind, trace.error.phase) == (ErrorKind.CONNECT, Phase.CONNECT)
    assert "refused" in trace.error.message
    assert trace.error.code == "connect"
    assert trace.dns_ms is not None and trace.connect_done_ns is None


def test_dns_is_timed_with_the_injected_resolver(
    lab: LabFactory, machine_noise: MachineNoise
) -> None:
    async def delayed(host: str, port: int) -> list[str]:
        await asyncio.sleep(0.05)
        return ["127.0.0.1"]

    with lab() as server:
        url = server.base_url.replace("127.0.0.1", "api.lab.test")
        trace = _one(url, resolver=delayed)
    assert trace.error is None, trace.error
    assert trace.dns_ms is not None
    machine_noise.assert_near(trace.dns_ms, 50.0, 8.0, 25.0)
    assert trace.connect_ms is not None and trace.connect_ms < machine_noise.bound_ms(20.0, 45.0)


def test_untrusted_certificate_is_a_tls_error(lab: LabFactory) -> None:
    with lab(tls=True) as server:
        trace = _one(server.base_url)
    assert trace.error is not None
    assert (trace.error.kind, trace.error.phase) == (ErrorKind.TLS, Phase.TLS)
    assert "certificate verify failed" in trace.error.message.lower()


def test_insecure_skips_verification(lab: LabFactory) -> None:
    with lab(tls=True) as server:
        trace = _one(server.base_url, insecure=True)
    assert trace.error is None, trace.error


def test_unauthorized_names_status_and_keeps_the_key_out(lab: LabFactory) -> None:
    with lab(LabConfig(api_key="another-key")) as server:
        trace = _one(server.base_url)
    assert trace.error is not None
    assert trace.error.code == "http:401"
    assert trace.error.phase is Phase.WAIT
    assert SECRET not in str(trace.error)


def test_key_echoed_by_the_server_is_redacted() -> None:
    def echo(request: bytes) -> list[Step]:
        auth = request.split(b"authorization: ")[1].split(b"\r\n")[0]
        body = json.dumps({"error": {"message": f"Incorrect API key: {auth.decode()}"}})
        return plain_response("401 Unauthorized", "application/json", body.encode())

    with ScriptedServer(echo) as server:
        trace = _one(server.base_url)
        assert SECRET.encode() in server.requests[0]
    assert trace.error is not None and trace.error.status == 401
    assert SECRET not in trace.error.message
    assert "***" in trace.error.message


@pytest.mark.parametrize(
    ("status", "ctype", "body", "expect"),
    [
        (
            "404 Not Found",
            "application/json",
            b'{"error":{"message":"model m not found"}}',
            "not found",
        ),
        (
            "429 Too Many Requests",
            "application/json",
            b'{"error":{"message":"slow down"}}',
            "slow down",
        ),
        ("500 Internal Server Error", "text/plain", b"boom", "boom"),
        (
            "503 Service Unavailable",
            "text/html",
            b"<html><head><title>503 Service Temporarily Unavailable</title></head>"
            b"<body><h1>down</h1></body></html>",
            "503 Service Temporarily Unavailable",
        ),
    ],
)
def test_http_errors_carry_status_and_body_message(
    status: str, ctype: str, body: bytes, expect: str
) -> None:
    script = plain_response(status, ctype, body)
    if status.startswith("429"):
        script[0] = script[0].replace(b"\r\n\r\n", b"\r\nretry-after: 7\r\n\r\n")
    trace = _scripted(script)
    assert trace.error is not None
    assert trace.error.kind is ErrorKind.HTTP
    assert trace.error.status == int(status.split()[0])
    assert expect in trace.error.message
    if status.startswith("429"):
        assert "Retry-After: 7" in trace.error.message
        assert trace.error.retry_after_s == 7.0
    else:
        assert trace.error.retry_after_s is None


@pytest.mark.parametrize(
    ("header", "expected_s"),
    [("2.5", 2.5), ("in 30 s", None), ("-1", None), (None, 30.0),
     ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)],
)  # fmt: skip
def test_retry_after_is_read_in_seconds_or_as_an_http_date(
    header: str | None, expected_s: float | None
) -> None:
    """``None`` stands for an HTTP date 30 s from now; a date past asks for no wait."""
    import email.utils
    import time

    value = header or email.utils.formatdate(time.time() + 30, usegmt=True)
    script = plain_response("503 Service Unavailable", "text/plain", b"busy")
    script[0] = script[0].replace(b"\r\n\r\n", f"\r\nretry-after: {value}\r\n\r\n".encode())
    trace = _scripted(script)
    assert trace.error is not None and trace.error.status == 503
    if expected_s is None:
        assert trace.error.retry_after_s is None
    else:
        assert trace.error.retry_after_s == pytest.approx(
            expected_s, abs=2.0 if header is None else 0
        )


def test_a_body_that_is_not_an_event_stream_is_malformed() -> None:
    trace = _scripted(plain_response("200 OK", "text/html", b"<html>hello</html>"))
    assert trace.error is not None
    assert trace.error.kind is ErrorKind.MALFORMED
    assert "text/html" in trace.error.message


def test_malformed_json_in_an_event() -> None:
    trace = _scripted(sse_response([GOOD_EVENTS[1], b"data: {not json\n\n"]))
    assert trace.error is not None
    assert (trace.error.kind, trace.error.phase) == (ErrorKind.MALFORMED, Phase.STREAM)
    assert len(trace.chunks) == 1


def test_invalid_utf8_is_malformed() -> None:
    trace = _scripted(sse_response([b'data: {"choices":[{"delta":{"content":"\xff\xfe"}}]}\n\n']))
    assert trace.error is not None
    assert trace.error.kind is ErrorKind.MALFORMED
    assert "utf-8" in trace.error.message.lower()


def test_stream_cut_midway_is_broken() -> None:
    script = sse_response(GOOD_EVENTS[:2])
    script = [*script[:-1], "close"]
    trace = _scripted(script)
    assert trace.error is not None
    assert (trace.error.kind, trace.error.phase) == (ErrorKind.STREAM_BROKEN, Phase.STREAM)
    assert trace.first_token_ns is not None


def test_connection_reset_midway_is_broken() -> None:
    script = sse_response(GOOD_EVENTS[:2])
    script = [*script[:-1], 0.02, "reset"]
    trace = _scripted(script)
    assert trace.error is not None
    assert trace.error.kind is ErrorKind.STREAM_BROKEN


def test_clean_end_without_done_or_finish_is_broken() -> None:
    trace = _scripted(sse_response(GOOD_EVENTS[:2]))
    assert trace.error is not None
    assert trace.error.kind is ErrorKind.STREAM_BROKEN
    assert "[DONE]" in trace.error.message


def test_error_event_in_the_stream() -> None:
    trace = _scripted(sse_response([b'data: {"error":{"message":"overloaded"}}\n\n']))
    assert trace.error is not None
    assert "overloaded" in trace.error.message


def test_hang_before_headers_times_out_waiting() -> None:
    trace = _scripted([5.0], timeouts=Timeouts(read=0.3))
    assert trace.error is not None
    assert trace.error.code == "timeout:wait"


def test_the_read_deadline_counts_from_each_read_not_from_the_first() -> None:
    """Chunks 0.2 s apart under a 0.3 s read timeout: a stream of 1 s in all never
    waits 0.3 s for one, so it ends whole; then a pause of 0.6 s after quick chunks
    times out, 0.3 s after the last one came, not earlier and not at the pause's end."""
    paced: list[Step] = [sse_response(GOOD_EVENTS)[0]]
    for event in [*[GOOD_EVENTS[0]] * 4, *GOOD_EVENTS[1:]]:
        paced += [0.2, chunk(event)]
    paced.append(b"0\r\n\r\n")
    whole = _scripted(paced, timeouts=Timeouts(read=0.3))
    assert whole.error is None, whole.error
    assert whole.total_ms is not None and whole.total_ms > 1000
    started = time.perf_counter()
    stalled = _scripted(
        [sse_response(GOOD_EVENTS)[0], chunk(GOOD_EVENTS[1]), 0.05, chunk(GOOD_EVENTS[1]), 0.6,
         chunk(GOOD_EVENTS[2])],
        timeouts=Timeouts(read=0.3),
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    assert stalled.error is not None and stalled.error.code == "timeout:stream"
    assert len(stalled.chunks) == 2
    # Given up 0.3 s after the second chunk (0.35 s in), before the pause's end at 0.65.
    assert 0.3 <= elapsed < 0.6


def test_a_failed_request_does_not_stop_the_others() -> None:
    counter = itertools.count()

    def script(request: bytes) -> list[Step]:
        if next(counter) == 1:
            return plain_response("500 Internal Server Error", "text/plain", b"flaky")
        return sse_response(GOOD_EVENTS)

    with ScriptedServer(script) as server:
        plan = ProbePlan(endpoint=Endpoint(server.base_url, "lab-sim"), repeat=3)
        run = asyncio.run(run_probe(plan))
    codes = [t.error.code if t.error else None for t in run.traces]
    assert codes == [None, "http:500", None]
    assert [len(t.chunks) for t in run.traces] == [2, 0, 2]


def test_a_reused_connection_closed_before_answering_is_retried_on_a_new_one() -> None:
    calls = itertools.count()

    def script(request: bytes) -> list[Step]:
        return ["close"] if next(calls) == 1 else sse_response(GOOD_EVENTS)

    with ScriptedServer(script) as server:
        plan = ProbePlan(endpoint=Endpoint(server.base_url, "lab-sim"), repeat=2)
        run = asyncio.run(run_probe(plan))
        assert len(server.requests) == 3
    first, second = run.traces
    assert first.error is None and second.error is None
    assert second.new_connection is True
    assert second.connection_id != first.connection_id


def test_concurrent_requests_each_on_a_new_connection(lab: LabFactory) -> None:
    async def go() -> list[RequestTrace]:
        endpoint = Endpoint(lab_url, "lab-sim")
        async with ProbeSession(endpoint, reuse_connections=False) as session:
            return list(
                await asyncio.gather(session.request("short", 2), session.request("long " * 50, 40))
            )

    with lab() as server:
        lab_url = server.base_url
        traces = asyncio.run(go())
    assert [t.error for t in traces] == [None, None]
    assert all(t.new_connection for t in traces)
    assert traces[0].connection_id != traces[1].connection_id


def test_raise_for_error_gives_the_typed_exception() -> None:
    from latdoc.errors import RequestFailed

    trace = _scripted(plain_response("503 Service Unavailable", "text/plain", b"later"))
    with pytest.raises(RequestFailed, match="http:503 during wait") as caught:
        trace.raise_for_error()
    assert caught.value.error is trace.error
    with ScriptedServer(sse_response(GOOD_EVENTS)) as server:
        good = _one(server.base_url)
    assert good.raise_for_error() is good


def test_dns_failure_is_a_dns_error() -> None:
    async def no_such_host(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    trace = _one("http://api.lab.invalid/v1", resolver=no_such_host)
    assert trace.error is not None
    assert (trace.error.kind, trace.error.phase) == (ErrorKind.DNS, Phase.DNS)
    assert "api.lab.invalid" in trace.error.message


def test_slow_dns_times_out_in_the_dns_phase() -> None:
    async def slow(host: str, port: int) -> list[str]:
        await asyncio.sleep(5)
        return ["127.0.0.1"]

    trace = _one("http://api.lab.test/v1", resolver=slow, timeouts=Timeouts(connect=0.2))
    assert trace.error is not None
    assert trace.error.code == "timeout:dns"
