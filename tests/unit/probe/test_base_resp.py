"""MiniMax's errors come with HTTP 200 and a ``base_resp`` body: each is typed by the
status its code stands for, as an event of a stream and as a whole JSON body, so the
retry policy classes it as it classes that status."""

from __future__ import annotations

import json
from typing import Any

import pytest

from latdoc.client import FailureClass, classify_status
from latdoc.errors import ErrorKind, Phase
from latdoc.probe import dialects, parse_event
from latdoc.probe._dialect_io import error_in_body
from latdoc.probe._failures import unframed

CHAT = dialects.chat.SPEC


def _base_resp(code: int, message: str = "rate limit exceeded(RPM)") -> dict[str, Any]:
    return {
        "id": "0457ab",
        "choices": None,
        "base_resp": {"status_code": code, "status_msg": message},
    }


@pytest.mark.parametrize(
    ("code", "status", "failure"),
    [
        (1002, 429, FailureClass.RATE_LIMIT),
        (1039, 429, FailureClass.RATE_LIMIT),
        (1004, 401, FailureClass.CLIENT),
        (2049, 401, FailureClass.CLIENT),
        (1008, 402, FailureClass.CLIENT),
        (2013, 400, FailureClass.CLIENT),
        (1000, 500, FailureClass.SERVER),
        (1024, 500, FailureClass.SERVER),
        (1033, 500, FailureClass.SERVER),
        (1001, 504, FailureClass.SERVER),
    ],
)
def test_each_code_is_an_error_of_its_status(code: int, status: int, failure: FailureClass) -> None:
    event = parse_event(_base_resp(code), CHAT)
    assert event.error == f"base_resp {code}: rate limit exceeded(RPM)"
    assert event.error_status == status
    assert classify_status(status) is failure
    error = unframed(json.dumps(_base_resp(code)).encode(), "application/json", CHAT, Phase.WAIT)
    assert error.kind is ErrorKind.HTTP and error.code == f"http:{status}"
    assert error.message == f"HTTP 200 with an error in its body: {event.error}"


def test_a_code_not_known_is_an_error_of_no_status() -> None:
    event = parse_event(_base_resp(1234, ""), CHAT)
    assert (event.error, event.error_status) == ("base_resp 1234", None)


def test_a_base_resp_of_success_beside_a_chunk_is_read_as_the_chunk() -> None:
    chunk = {
        "id": "0457ab",
        "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}],
        "base_resp": {"status_code": 0, "status_msg": ""},
    }
    event = parse_event(chunk, CHAT)
    assert event.error is None and event.output_chars == 2


@pytest.mark.parametrize(
    "body",
    [b'{"choices": []}', b"[1, 2]", b"not json", b'{"base_resp": {"status_code": 0}}'],
)
def test_a_200_body_without_an_error_is_no_stream(body: bytes) -> None:
    assert error_in_body(body, CHAT) is None
    error = unframed(body, "application/json", CHAT, Phase.WAIT)
    assert error.kind is ErrorKind.MALFORMED
    assert error.message == "response is not an event stream (content-type: application/json)"


def test_an_error_object_in_a_200_body_is_typed_by_its_code() -> None:
    body = {"error": {"message": "Too many requests", "code": "rate_limit_exceeded"}}
    error = unframed(json.dumps(body).encode(), "application/json", CHAT, Phase.WAIT)
    assert error.code == "http:429"
