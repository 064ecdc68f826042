"""What a trace records for load work: request and response ids, the wall-clock start in
nanoseconds, every attempt of a resent request, and the fields an engine needs."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from pathlib import Path

import pytest

from conftest import micros_since_epoch
from latdoc import (
    Endpoint,
    ProbePlan,
    ProbeSession,
    RequestTrace,
    Step,
    Store,
    probe_endpoint,
)
from latdoc.cli import EXIT_OK, main
from latdoc.probe import Prompt, dialects, request_body
from scripted_server import ScriptedServer, plain_response, sse_response
from scripted_server import Step as ScriptStep

EVENTS = [
    b'data: {"id":"chatcmpl-7","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n',
    b'data: {"id":"chatcmpl-7","choices":[{"index":0,"delta":{"content":" you"},'
    b'"finish_reason":"stop"}]}\n\n',
    b"data: [DONE]\n\n",
]


NO_ID_EVENTS = [e.replace(b'"id":"chatcmpl-7",', b"") for e in EVENTS]


def _head(request: bytes) -> dict[str, str]:
    head = request.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head)}


def _body(request: bytes) -> dict[str, object]:
    body: dict[str, object] = json.loads(request.split(b"\r\n\r\n", 1)[1])
    return body


async def _requests(
    endpoint: Endpoint, count: int, *, prompt: Prompt = "hi", **options: object
) -> list[RequestTrace]:
    async with ProbeSession(endpoint, **options) as session:  # type: ignore[arg-type]
        return [await session.request(prompt, 4) for _ in range(count)]


def test_each_attempt_sends_its_own_request_id_and_keeps_the_response_id() -> None:
    with ScriptedServer(sse_response(EVENTS)) as server:
        before = time.time_ns()
        traces = asyncio.run(_requests(Endpoint(server.base_url, "m"), 3))
        after = time.time_ns()
        sent = [_head(r)["x-request-id"] for r in server.requests]
    assert [t.request_id for t in traces] == sent
    assert len(set(sent)) == 3
    assert all(uuid.UUID(i).version == 4 for i in sent)
    assert {t.response_id for t in traces} == {"chatcmpl-7"}
    assert [t.attempt for t in traces] == [1, 1, 1]
    for trace in traces:
        assert trace.started_ns is not None and before <= trace.started_ns <= after
        assert micros_since_epoch(trace.started_at) == trace.started_ns // 1000


def test_a_request_id_given_by_the_caller_is_sent_once_instead() -> None:
    async def go(endpoint: Endpoint) -> RequestTrace:
        async with ProbeSession(endpoint) as session:
            return await session.request("hi", 4, headers={"X-Request-ID": "load-17"})

    with ScriptedServer(sse_response(EVENTS)) as server:
        trace = asyncio.run(go(Endpoint(server.base_url, "m")))
        (request,) = server.requests
    assert trace.request_id == "load-17"
    assert request.lower().count(b"x-request-id") == 1
    assert _head(request)["x-request-id"] == "load-17"


def test_the_response_id_falls_back_to_the_response_header() -> None:
    head, *rest = sse_response(NO_ID_EVENTS)
    assert isinstance(head, bytes)
    script = [head.replace(b"\r\n\r\n", b"\r\nx-request-id: req_abc123\r\n\r\n"), *rest]
    with ScriptedServer(script) as server:
        (trace,) = asyncio.run(_requests(Endpoint(server.base_url, "m"), 1))
    assert trace.response_id == "req_abc123"
    with ScriptedServer(sse_response(NO_ID_EVENTS)) as server:
        (trace,) = asyncio.run(_requests(Endpoint(server.base_url, "m"), 1))
    assert trace.response_id is None


def _refuses_stream_options(request: bytes) -> list[ScriptStep]:
    if "stream_options" in _body(request):
        message = b'{"error": {"message": "Unrecognized request argument: stream_options"}}'
        return plain_response("400 Bad Request", "application/json", message)
    return sse_response(EVENTS)


def test_a_resend_is_recorded_as_two_attempts_with_two_ids() -> None:
    kept: list[RequestTrace] = []

    def keep(first: RequestTrace) -> bool:
        kept.append(first)
        return True

    with ScriptedServer(_refuses_stream_options) as server:
        (trace,) = asyncio.run(_requests(Endpoint(server.base_url, "m"), 1, on_resend=keep))
        sent = [_head(r)["x-request-id"] for r in server.requests]
        bodies = [_body(r) for r in server.requests]
    (first,) = kept
    assert (first.attempt, first.status, first.request_id) == (1, 400, sent[0])
    assert first.error is not None and "stream_options" in first.error.message
    assert (trace.attempt, trace.ok, trace.request_id) == (2, True, sent[1])
    assert sent[0] != sent[1]
    assert "stream_options" in bodies[0] and "stream_options" not in bodies[1]


def test_a_refused_resend_returns_the_first_attempt() -> None:
    with ScriptedServer(_refuses_stream_options) as server:
        first, then = asyncio.run(
            _requests(Endpoint(server.base_url, "m"), 2, on_resend=lambda first: False)
        )
        assert len(server.requests) == 2
        assert "stream_options" not in _body(server.requests[1])
    assert (first.attempt, first.status) == (1, 400)
    assert (then.attempt, then.ok) == (1, True)


def test_a_probe_run_stores_both_attempts_of_a_resent_request() -> None:
    calls = itertools.count()

    def script(request: bytes) -> list[ScriptStep]:
        return ["close"] if next(calls) == 1 else sse_response(EVENTS)

    with ScriptedServer(script) as server, Store(":memory:") as store:
        plan = ProbePlan(endpoint=Endpoint(server.base_url, "m"), repeat=2)
        stored = probe_endpoint(plan, store=store)
        _, samples, _ = store.load_run(stored.run_id)
        assert len(server.requests) == 3
    assert [(s.step, s.trace.attempt, s.trace.ok) for s in samples] == [
        (Step.PROBE, 1, True),
        (Step.PROBE, 1, False),
        (Step.PROBE, 2, True),
    ]
    assert len({s.trace.request_id for s in samples}) == 3
    assert [t.attempt for t in stored.result.traces] == [1, 2]


def test_extra_body_fields_are_merged_into_every_request() -> None:
    extra = {"ignore_eos": True, "temperature": 0.0}
    with ScriptedServer(sse_response(EVENTS)) as server:
        asyncio.run(_requests(Endpoint(server.base_url, "m", extra_body=extra), 2))
        bodies = [_body(r) for r in server.requests]
    for body in bodies:
        assert body["ignore_eos"] is True and body["temperature"] == 0.0
        assert body["model"] == "m" and body["stream"] is True
    completions = request_body(
        dialects.completions.SPEC, "m", "hi", 4, include_usage=False, extra={"ignore_eos": True}
    )
    assert completions == {
        "model": "m",
        "max_tokens": 4,
        "stream": True,
        "prompt": "hi",
        "ignore_eos": True,
    }


def test_probe_sends_the_extra_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedServer(sse_response(EVENTS)) as server:
        code = main(
            ["probe", server.base_url, "-m", "m", "--db", str(tmp_path / "runs.db"),
             "--extra-body", '{"ignore_eos": true, "temperature": 0.7}']
        )  # fmt: skip
        body = _body(server.requests[0])
    capsys.readouterr()
    assert code == EXIT_OK
    assert (body["ignore_eos"], body["temperature"]) == (True, 0.7)
