"""The probe's own HTTP/1.1 connection: every way a server frames a response, keeps or
closes its connection, and breaks off, against a real scripted server on loopback."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence

import pytest

from latdoc import Endpoint, ErrorKind, ProbeSession, RequestTrace
from scripted_server import ScriptedServer, Step, chunk, sse_response

EVENTS = [
    b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n',
    b'data: {"choices":[{"delta":{"content":" there"}}]}\n\n',
    b"data: [DONE]\n\n",
]
SSE = b"".join(EVENTS)


def _head(extra: str = "", version: str = "1.1") -> bytes:
    return f"HTTP/{version} 200 OK\r\ncontent-type: text/event-stream\r\n{extra}\r\n".encode()


def _twice(script: Callable[[int], Sequence[Step]]) -> tuple[list[RequestTrace], int]:
    """Two requests in one session of one connection; the traces and the requests the
    server read."""
    calls = itertools.count()
    with ScriptedServer(lambda _request: script(next(calls))) as server:

        async def go() -> list[RequestTrace]:
            endpoint = Endpoint(server.base_url, "lab-sim")
            async with ProbeSession(endpoint, max_connections=1) as session:
                return [await session.request("hi", 2) for _ in range(2)]

        traces = asyncio.run(go())
        return traces, len(server.requests)


def _kept(traces: list[RequestTrace]) -> bool:
    first, second = traces
    assert first.error is None and second.error is None, (first.error, second.error)
    assert [len(t.chunks) for t in traces] == [2, 2]
    return second.new_connection is False and second.connection_id == first.connection_id


def test_a_chunked_response_read_to_its_end_keeps_the_connection() -> None:
    traces, served = _twice(lambda _: sse_response(EVENTS))
    assert _kept(traces) and served == 2


def test_a_content_length_response_keeps_the_connection() -> None:
    body = [_head(f"content-length: {len(SSE)}\r\n"), SSE]
    assert _kept(_twice(lambda _: body)[0])


@pytest.mark.parametrize(
    ("head", "kept"),
    [
        (_head("transfer-encoding: chunked\r\nconnection: close\r\n"), False),
        (_head("transfer-encoding: chunked\r\nconnection: keep-alive, Upgrade\r\n"), True),
        (_head("transfer-encoding: chunked\r\n", version="1.0"), False),
        (_head("transfer-encoding: chunked\r\nconnection: keep-alive\r\n", version="1.0"), True),
    ],
)
def test_the_connection_is_kept_only_where_the_server_keeps_it(head: bytes, kept: bool) -> None:
    steps: list[Step] = [head, *(chunk(e) for e in EVENTS), b"0\r\n\r\n"]
    if not kept:
        steps.append("close")
    assert _kept(_twice(lambda _: steps)[0]) is kept


def test_a_body_the_close_ends_is_read_whole_and_the_connection_not_kept() -> None:
    traces, served = _twice(lambda _: [_head(), EVENTS[0], 0.02, EVENTS[1], EVENTS[2], "close"])
    assert not _kept(traces) and served == 2


def test_an_interim_answer_is_passed_over_for_the_final_one() -> None:
    steps: list[Step] = [b"HTTP/1.1 100 Continue\r\n\r\n", *sse_response(EVENTS)]
    traces, _ = _twice(lambda _: steps)
    assert _kept(traces)


def test_bytes_after_the_response_end_leave_the_connection_unused() -> None:
    """Another answer in the same write as the end: not this response's body, and the
    connection is not used again."""
    *steps, end = sse_response(EVENTS)
    stray = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nstray"
    traces, _ = _twice(lambda _: [*steps, end + stray])
    assert not _kept(traces)


@pytest.mark.parametrize(
    "cut",
    [
        [_head("transfer-encoding: chunked\r\n"), chunk(EVENTS[0]), "close"],
        [_head("content-length: 500\r\n"), EVENTS[0], "close"],
        [_head("transfer-encoding: chunked\r\n"), chunk(EVENTS[0]), "reset"],
    ],
    ids=["chunked", "content-length", "reset"],
)
def test_a_body_cut_short_is_a_broken_stream_and_the_next_request_reconnects(
    cut: list[Step],
) -> None:
    traces, _ = _twice(lambda n: cut if n == 0 else sse_response(EVENTS))
    first, second = traces
    assert first.error is not None and first.error.kind is ErrorKind.STREAM_BROKEN
    assert len(first.chunks) == 1
    assert second.error is None and second.new_connection is True


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ([b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n", "close"], "complete"),
        ([b"NOT HTTP AT ALL\r\n\r\n"], ""),
    ],
    ids=["headers-cut", "garbage"],
)
def test_a_head_cut_or_not_http_is_a_typed_error(answer: list[Step], words: str) -> None:
    with ScriptedServer(answer) as server:

        async def go() -> RequestTrace:
            async with ProbeSession(Endpoint(server.base_url, "lab-sim")) as session:
                return await session.request("hi", 2)

        trace = asyncio.run(go())
    assert trace.error is not None
    assert trace.error.kind in (ErrorKind.STREAM_BROKEN, ErrorKind.MALFORMED)
    assert words in trace.error.message
    assert trace.first_token_ns is None
