"""The probe in each dialect: Anthropic Messages, OpenAI Responses and chat, with
reasoning timed apart from the answer, tool calls as output, unknown events counted,
error events classed as their status, and a wrong ``--api`` named."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

from conftest import FAST, LabFactory
from latdoc import Endpoint, ErrorKind, ProbeSession, RequestTrace
from latdoc.client import FailureClass, classify_error_type, classify_status
from latdoc.lab.sim import LabConfig, LatencyModel, chat_prompt_tokens
from latdoc.probe import dialects
from latdoc.probe.dialects import DialectSpec
from machine_noise import MachineNoise, held_back
from scripted_server import ScriptedServer, plain_response, sse_response

PROMPT = "Hello, please briefly introduce yourself."


THINK = 5


SLOW_THOUGHT = LatencyModel(
    prefill_base_ms=5.0, prefill_ms_per_token=0.01, decode_ms_per_token=4.0, reasoning_tokens=THINK
)


TOOLS: Mapping[DialectSpec, list[dict[str, Any]]] = {
    dialects.chat.SPEC: [{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
    dialects.anthropic.SPEC: [{"name": "lookup", "input_schema": {"type": "object"}}],
    dialects.responses.SPEC: [{"type": "function", "name": "lookup", "parameters": {}}],
}


def _probe(
    base_url: str,
    dialect: DialectSpec,
    *,
    max_tokens: int = 4,
    key: str | None = None,
    extra: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> RequestTrace:
    async def go() -> RequestTrace:
        endpoint = Endpoint(base_url, "lab-sim", dialect, api_key=key, extra_body=extra or {})
        async with ProbeSession(endpoint) as session:
            return await session.request(PROMPT, max_tokens, headers=headers)

    return asyncio.run(go())


@pytest.mark.parametrize(
    "dialect",
    [dialects.anthropic.SPEC, dialects.responses.SPEC, dialects.chat.SPEC],
    ids=lambda d: d.name,
)
def test_reasoning_is_timed_apart_from_the_answer(
    lab: LabFactory, dialect: DialectSpec, machine_noise: MachineNoise
) -> None:
    with (
        lab(LabConfig(latency=SLOW_THOUGHT, api_key="sk-lab-secret")) as server,
        held_back() as held,
    ):
        trace = _probe(server.base_url, dialect, key="sk-lab-secret")
    assert trace.error is None, trace.error
    assert trace.url.endswith(dialect.route.path)
    assert trace.first_token_ns == trace.first_reasoning_ns
    assert trace.first_reasoning_ns is not None and trace.first_answer_ns is not None
    assert trace.reasoning_ms is not None
    machine_noise.assert_near(
        trace.reasoning_ms, THINK * 4.0, 15.0, THINK * 4.0 - 1, late_ms=held.ms
    )
    assert trace.reasoning_tokens == THINK
    assert trace.output_tokens == THINK + 4 and trace.answer_tokens == 4
    assert len(trace.chunks) == THINK + 4
    assert trace.prompt_tokens == chat_prompt_tokens([{"role": "user", "content": PROMPT}])
    assert trace.finish_reason == "length"
    assert trace.unknown_events == 0
    assert trace.response_id is not None


@pytest.mark.parametrize("per_event", [1, 3])
def test_thinking_between_think_tags_in_the_answer_is_timed_as_reasoning(
    lab: LabFactory, per_event: int, machine_noise: MachineNoise
) -> None:
    """The lab writes its THINK reasoning tokens into the answer's content, ``<think>``
    before the first and ``</think>`` after the last (MiniMax's way), one or three
    tokens an event: the first answer token is the first after the tag, THINK token
    times after the first thinking token, as with ``reasoning_content``."""
    config = LabConfig(latency=SLOW_THOUGHT, reasoning_in_text=True, tokens_per_event=per_event)
    with lab(config) as server, held_back() as held:
        trace = _probe(server.base_url, dialects.chat.SPEC, max_tokens=6)
    assert trace.error is None, trace.error
    assert trace.first_token_ns == trace.first_reasoning_ns
    assert trace.first_reasoning_ns is not None and trace.first_answer_ns is not None
    assert trace.reasoning_ms is not None and trace.ttfa_ms is not None
    # Beside busy workers the lab, held back, once wrote every owed event at once: 0 ms.
    machine_noise.assert_near(
        trace.reasoning_ms, THINK * 4.0, 15.0, THINK * 4.0 - 1, late_ms=held.ms
    )
    assert trace.reasoning_tokens == THINK
    assert trace.output_tokens == THINK + 6 and trace.answer_tokens == 6


def test_low_effort_thinks_less_and_disabled_thinking_none(lab: LabFactory) -> None:
    with lab(LabConfig(latency=SLOW_THOUGHT)) as server:
        low = _probe(
            server.base_url, dialects.responses.SPEC, extra={"reasoning": {"effort": "low"}}
        )
        off = _probe(
            server.base_url, dialects.anthropic.SPEC, extra={"thinking": {"type": "disabled"}}
        )
    assert low.reasoning_tokens == round(THINK / 4)
    assert off.first_reasoning_ns is None and off.reasoning_ms is None
    assert off.first_token_ns == off.first_answer_ns


@pytest.mark.parametrize(
    "dialect",
    [dialects.anthropic.SPEC, dialects.responses.SPEC, dialects.chat.SPEC],
    ids=lambda d: d.name,
)
def test_a_tool_calls_arguments_are_the_first_output(lab: LabFactory, dialect: DialectSpec) -> None:
    with lab(LabConfig(latency=FAST, answer_tokens=3)) as server:
        trace = _probe(server.base_url, dialect, max_tokens=8, extra={"tools": TOOLS[dialect]})
    assert trace.error is None, trace.error
    assert trace.first_token_ns is not None
    assert trace.first_token_ns == trace.first_answer_ns == trace.chunks[0].t_ns
    assert trace.output_tokens == 3
    assert trace.finish_reason in ("tool_calls", "stop")


def _anthropic_events(*events: tuple[str, dict[str, Any]]) -> list[bytes]:
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]


def _delta(delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})


START = (
    "message_start",
    {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 7}}},
)


BLOCK = (
    "content_block_start",
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
)


TEXT = _delta({"type": "text_delta", "text": "Hi"})


STOP = {
    "type": "message_delta",
    "delta": {"stop_reason": "end_turn"},
    "usage": {"output_tokens": 2},
}


END = (("message_delta", STOP), ("message_stop", {"type": "message_stop"}))


def test_unknown_event_types_are_counted_not_fatal() -> None:
    script = sse_response(
        _anthropic_events(
            START,
            ("ping", {"type": "ping"}),
            ("content_block_sparkle", {"type": "content_block_sparkle", "index": 0}),
            BLOCK,
            TEXT,
            _delta({"type": "glitter_delta"}),
            TEXT,
            *END,
        )
    )  # fmt: skip
    with ScriptedServer(script) as server:
        trace = _probe(server.base_url, dialects.anthropic.SPEC, key="sk-ant-secret")
        sent = server.requests[0].lower()
    assert trace.error is None, trace.error
    assert trace.unknown_events == 2
    assert len(trace.chunks) == 2
    assert (trace.prompt_tokens, trace.output_tokens, trace.finish_reason) == (7, 2, "stop")
    assert trace.response_id == "msg_1"
    assert b"x-api-key: sk-ant-secret" in sent and b"anthropic-version: 2023-06-01" in sent
    assert b"authorization" not in sent


def test_an_overloaded_error_event_is_a_529_the_retry_policy_retries(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, fault_after_tokens=1)) as server:
        trace = _probe(
            server.base_url, dialects.anthropic.SPEC, headers={"x-lab-fault": "overloaded"}
        )
    assert trace.error is not None
    assert trace.error.kind is ErrorKind.HTTP and trace.error.status == 529
    assert "overloaded_error" in trace.error.message
    assert trace.error.code == "http:529"
    assert classify_status(trace.error.status) is FailureClass.SERVER
    assert classify_error_type("overloaded_error") is FailureClass.SERVER
    assert classify_error_type("rate_limit_error") is FailureClass.RATE_LIMIT
    assert classify_error_type("invalid_request_error") is FailureClass.CLIENT
    assert classify_error_type("sparkle_error") is None


def test_an_anthropic_error_body_names_its_type() -> None:
    body = json.dumps(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    with ScriptedServer(
        plain_response("529 Overloaded", "application/json", body.encode())
    ) as server:
        trace = _probe(server.base_url, dialects.anthropic.SPEC)
    assert trace.error is not None and trace.error.status == 529
    assert "overloaded_error: Overloaded" in trace.error.message


@pytest.mark.parametrize(
    ("spoken", "asked"),
    [
        (spoken, asked)
        for spoken in (dialects.anthropic.SPEC, dialects.responses.SPEC, dialects.chat.SPEC)
        for asked in (dialects.anthropic.SPEC, dialects.responses.SPEC, dialects.chat.SPEC)
        if spoken is not asked
    ],
)
def test_a_wrong_dialect_is_named(spoken: DialectSpec, asked: DialectSpec) -> None:
    created = {"type": "response.created", "response": {"id": "r"}}
    chunk = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": "Hi"}}],
    }
    events = {
        dialects.anthropic.SPEC: _anthropic_events(START, BLOCK, TEXT, *END),
        dialects.responses.SPEC: _anthropic_events(("response.created", created)),
        dialects.chat.SPEC: [b"data: %s\n\n" % json.dumps(chunk).encode()],
    }[spoken]
    with ScriptedServer(sse_response(events)) as server:
        trace = _probe(server.base_url, asked)
    assert trace.error is not None and trace.error.kind is ErrorKind.MALFORMED
    assert f"try --api {spoken.name}" in trace.error.message
