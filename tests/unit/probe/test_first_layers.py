"""First token, defined per layer, in every dialect: the first response byte, the
stream's first event (a control event counts), the first reasoning, the first answer
and the first tool call, each stamped apart. A control event (``response.created``,
``message_start``, ``messageStart``, a Gemini frame without parts, a role-only chunk,
Azure's prompt filter results) is never the first token.

Each dialect is served a scripted stream whose layers come GAP apart, in order: the
headers, control events, reasoning, the answer, a tool call; each layer's stamp is
checked against that schedule. Against the lab, whose control events leave with the
headers and whose first token waits for the prefill, the first event is the first
byte's and the first token the prefill's later."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest

from latdoc import (
    Diagnosis,
    RequestTrace,
    Sample,
    render_diagnosis,
    render_html,
    render_text,
    render_waterfall,
)
from latdoc.analysis.facts import gather_facts
from latdoc.analysis.repeats import summarize
from latdoc.lab.sim.dialects.bedrock import frame
from latdoc.probe import dialects, parse_event
from latdoc.probe.dialects import DialectSpec
from latdoc.records import Step
from latdoc.report.json_out import diagnosis_to_dict, trace_to_dict
from latdoc.store.codec import trace_from_record, trace_to_record
from report_samples import make_diagnosis, make_trace

Layers = tuple[list[bytes], list[bytes], list[bytes], list[bytes], list[bytes]]


"""A stream's events: control, reasoning, answer, tool call, end."""


def _sse(*objs: dict[str, Any], named: bool = False) -> list[bytes]:
    out = []
    for obj in objs:
        head = f"event: {obj['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(obj)}\n\n".encode())
    return out


def _choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _chat(azure: bool = False) -> Layers:
    control = _sse(_choice({"role": "assistant", "content": ""}))
    if azure:
        control = _sse({"choices": [], "prompt_filter_results": [{"prompt_index": 0}]}) + control
    tool = {"index": 0, "id": "call_1", "type": "function"}
    return (
        control,
        _sse(_choice({"reasoning_content": "Let me think"})),
        _sse(_choice({"content": "Sure"})),
        _sse(
            _choice({"tool_calls": [{**tool, "function": {"name": "lookup", "arguments": ""}}]}),
            _choice({"tool_calls": [{"index": 0, "function": {"arguments": '{"q":1}'}}]}),
        ),
        [*_sse(_choice({}, "tool_calls")), b"data: [DONE]\n\n"],
    )


def _completions() -> Layers:
    def text(value: str, finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "text": value, "finish_reason": finish}
        return {"id": "cmpl-1", "object": "text_completion", "choices": [choice]}

    return (
        _sse(text("")),
        [],
        _sse(text("Sure")),
        [],
        [*_sse(text("", "stop")), b"data: [DONE]\n\n"],
    )


def _responses() -> Layers:
    response = {"id": "resp_1", "status": "in_progress"}
    item = {"type": "function_call", "id": "fc_1", "name": "lookup", "arguments": ""}
    done = {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 9}}
    return (
        _sse(
            {"type": "response.created", "response": response},
            {"type": "response.in_progress", "response": response},
            {"type": "response.output_item.added", "item": {"type": "reasoning", "id": "rs_1"}},
            named=True,
        ),
        _sse({"type": "response.reasoning_summary_text.delta", "delta": "Hmm"}, named=True),
        _sse({"type": "response.output_text.delta", "delta": "Sure"}, named=True),
        _sse(
            {"type": "response.output_item.added", "item": item},
            {"type": "response.function_call_arguments.delta", "delta": '{"q":1}'},
            named=True,
        ),
        _sse({"type": "response.completed", "response": done}, named=True),
    )


def _anthropic() -> Layers:
    def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": body}

    def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_start", "index": index, "content_block": block}

    message = {"id": "msg_1", "usage": {"input_tokens": 5}}
    return (
        _sse(
            {"type": "message_start", "message": message},
            {"type": "ping"},
            start(0, {"type": "thinking", "thinking": ""}),
            named=True,
        ),
        _sse(delta(0, {"type": "thinking_delta", "thinking": "Hmm"}), named=True),
        _sse(
            delta(0, {"type": "signature_delta", "signature": "sig"}),
            {"type": "content_block_stop", "index": 0},
            start(1, {"type": "text", "text": ""}),
            delta(1, {"type": "text_delta", "text": "Sure"}),
            named=True,
        ),
        _sse(
            {"type": "content_block_stop", "index": 1},
            start(2, {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}),
            delta(2, {"type": "input_json_delta", "partial_json": '{"q":1}'}),
            named=True,
        ),
        _sse(
            {"type": "content_block_stop", "index": 2},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9},
            },
            {"type": "message_stop"},
            named=True,
        ),
    )


def _gemini_frames() -> tuple[list[dict[str, Any]], ...]:
    def parts(*body: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(body)}}
        if finish is not None:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "responseId": "r1"}

    usage = {"promptTokenCount": 5, "candidatesTokenCount": 3, "thoughtsTokenCount": 2}
    return (
        [
            {"candidates": [{"content": {"role": "model"}}], "responseId": "r1"},
            {"candidates": [{"content": {"role": "model", "parts": []}}], "usageMetadata": usage},
        ],
        [parts({"text": "Hmm", "thought": True})],
        [parts({"text": "Sure"})],
        [parts({"functionCall": {"name": "lookup", "args": {"q": 1}}}, finish="STOP")],
        [{"usageMetadata": usage}],
    )


def _gemini() -> Layers:
    control, reasoning, answer, tool, end = (
        [f"data: {json.dumps(f)}\r\n\r\n".encode() for f in fs] for fs in _gemini_frames()
    )
    return control, reasoning, answer, tool, end


def _gemini_array() -> Layers:
    frames = [json.dumps(f).encode() for fs in _gemini_frames() for f in fs]
    cut = [0, 2, 3, 4, 5, 6]
    pieces = []
    for a, b in itertools.pairwise(cut):
        joined = b",\r\n".join(frames[a:b])
        pieces.append([(b"[" if a == 0 else b",\r\n") + joined + (b"]" if b == 6 else b"")])
    return pieces[0], pieces[1], pieces[2], pieces[3], pieces[4]


def _bedrock() -> Layers:
    def event(name: str, obj: dict[str, Any]) -> bytes:
        headers = {
            ":event-type": name,
            ":content-type": "application/json",
            ":message-type": "event",
        }
        return frame(headers, json.dumps(obj).encode())

    def delta(index: int, body: dict[str, Any]) -> bytes:
        return event("contentBlockDelta", {"contentBlockIndex": index, "delta": body})

    tool = {"toolUse": {"toolUseId": "t1", "name": "lookup"}}
    usage = {"inputTokens": 5, "outputTokens": 9, "totalTokens": 14}
    return (
        [event("messageStart", {"role": "assistant"})],
        [delta(0, {"reasoningContent": {"text": "Hmm"}})],
        [
            delta(0, {"reasoningContent": {"signature": "sig"}}),
            event("contentBlockStop", {"contentBlockIndex": 0}),
            delta(1, {"text": "Sure"}),
        ],
        [
            event("contentBlockStop", {"contentBlockIndex": 1}),
            event("contentBlockStart", {"contentBlockIndex": 2, "start": tool}),
            delta(2, {"toolUse": {"input": '{"q":1}'}}),
        ],
        [
            event("contentBlockStop", {"contentBlockIndex": 2}),
            event("messageStop", {"stopReason": "tool_use"}),
            event("metadata", {"usage": usage, "metrics": {"latencyMs": 160}}),
        ],
    )


SSE_TYPE = "text/event-stream"


STREAMS: dict[str, tuple[DialectSpec, str, Callable[[], Layers]]] = {
    "chat": (dialects.chat.SPEC, SSE_TYPE, _chat),
    "azure": (dialects.azure.SPEC, SSE_TYPE, lambda: _chat(azure=True)),
    "completions": (dialects.completions.SPEC, SSE_TYPE, _completions),
    "responses": (dialects.responses.SPEC, SSE_TYPE, _responses),
    "anthropic": (dialects.anthropic.SPEC, SSE_TYPE, _anthropic),
    "gemini": (dialects.gemini.SPEC, SSE_TYPE, _gemini),
    "vertex": (dialects.vertex.SPEC, "application/json", _gemini_array),
    "bedrock": (dialects.bedrock.SPEC, "application/vnd.amazon.eventstream", _bedrock),
}


def test_every_dialect_has_a_layered_stream() -> None:
    assert {spec.name for spec in dialects.DIALECTS} == set(STREAMS)


MS = 1_000_000


def _layered(event_after_byte_ms: float, tool_after_token_ms: float | None) -> RequestTrace:
    """A reused-connection trace whose first token comes 400 ms after its first byte, its
    first event and first tool call where asked."""
    trace = make_trace(dns=None, connect=None, tls=None, first_token=400.0)
    assert trace.first_byte_ns is not None and trace.first_token_ns is not None
    tool = (
        None
        if tool_after_token_ms is None
        else trace.first_token_ns + round(tool_after_token_ms * MS)
    )
    return dataclasses.replace(
        trace,
        first_event_ns=trace.first_byte_ns + round(event_after_byte_ms * MS),
        first_answer_ns=trace.first_token_ns,
        first_tool_call_ns=tool,
    )


def _text(renderable: Any) -> str:
    return render_text(renderable, 120)


def test_the_waterfall_names_the_layers_that_part_and_only_them() -> None:
    parted = _text(render_waterfall(_layered(150.0, 300.0)))
    line = next(row for row in parted.splitlines() if "First output by layer" in row)
    assert line.index("first byte") < line.index("first event") < line.index("first token")
    assert line.index("first token") < line.index("first tool call")
    assert "first answer token" not in line  # the answer is the first token
    for together in (_layered(0.0, None), _layered(400.0, 0.0), _layered(0.5, None)):
        assert "First output by layer" not in _text(render_waterfall(together))


def test_repeats_give_a_first_event_row_only_where_it_parts() -> None:
    parted = summarize([_layered(150.0, 300.0) for _ in range(3)])
    together = summarize([_layered(0.0, 0.0) for _ in range(3)])
    assert parted.warm is not None and together.warm is not None
    event = parted.warm.get("First event")
    assert event is not None and event.mean == pytest.approx(_layered(150.0, None).first_event_ms)
    assert parted.warm.get("First tool call") is not None
    assert together.warm.get("First event") is None
    assert together.warm.get("First tool call") is None


def _diagnosis(traces: list[RequestTrace]) -> Diagnosis:
    samples = [Sample(Step.NETWORK, t, cold=False, index=i) for i, t in enumerate(traces)]
    facts = gather_facts(samples, None)
    return dataclasses.replace(make_diagnosis(), network=facts.network)


def test_the_diagnosis_shows_a_first_event_long_before_the_first_token() -> None:
    parted = _diagnosis([_layered(150.0 + i, None) for i in range(3)])
    together = _diagnosis([_layered(0.0, None) for _ in range(3)])
    assert parted.network["first_event_ms"] == pytest.approx(_layered(151.0, None).first_event_ms)
    assert parted.network["first_tool_call_ms"] is None
    assert together.network["first_event_ms"] == together.network["ttfb_ms"]
    assert "first event" in _text(render_diagnosis(parted))
    assert "first event" not in _text(render_diagnosis(together))
    page, plain = render_html(parted, []), render_html(together, [])
    assert "First output by layer: first byte" in page and "<code>first_event_ms</code>" in page
    assert "First output by layer" not in plain and "<code>first_event_ms</code>" not in plain
    assert set(diagnosis_to_dict(together)["steps"]["network"]) >= {
        "first_event_ms",
        "first_tool_call_ms",
    }


def test_a_stored_trace_keeps_its_layers_and_an_older_one_reads_none() -> None:
    trace = _layered(150.0, 300.0)
    record = trace_to_record(trace)
    assert trace_from_record(record) == trace
    assert record["first_event_ns"] == trace.first_event_ns is not None
    older = {k: v for k, v in record.items() if k not in ("first_event_ns", "first_tool_call_ns")}
    read = trace_from_record(older)
    assert read.first_event_ns is None and read.first_tool_call_ns is None
    assert read == dataclasses.replace(trace, first_event_ns=None, first_tool_call_ns=None)
    doc = trace_to_dict(trace)
    assert doc["first_event_ms"] == round(trace.first_event_ns / MS, 4)
    assert doc["first_tool_call_ms"] == round((trace.first_tool_call_ns or 0) / MS, 4)


TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}


GEMINI_CALL = {"functionCall": {"name": "lookup", "args": {"q": 1}}}


@pytest.mark.parametrize(
    ("dialect", "event", "obj", "tool"),
    [
        ("chat", None, _choice({"function_call": {"name": "lookup", "arguments": "{}"}}), 8),
        ("chat", None, _choice({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}), 2),
        ("chat", None, _choice({"content": "lookup"}), 0),
        ("anthropic", None, {"type": "content_block_start", "content_block": TOOL_USE}, 6),
        ("anthropic", None, {"type": "content_block_delta",
                             "delta": {"type": "input_json_delta", "partial_json": "{}"}}, 2),
        ("anthropic", None, {"type": "content_block_delta",
                             "delta": {"type": "text_delta", "text": "lookup"}}, 0),
        ("gemini", None, {"candidates": [{"content": {"parts": [GEMINI_CALL]}}]}, 13),
        ("gemini", None, {"candidates": [{"content": {"parts": [{"text": "lookup"}]}}]}, 0),
        ("responses", None, {"type": "response.output_text.delta", "delta": "{}"}, 0),
        ("responses", None, {"type": "response.mcp_call_arguments.delta", "delta": "{}"}, 2),
        ("bedrock", "contentBlockStart", {"start": {"toolUse": {"name": "lookup"}}}, 6),
        ("bedrock", "contentBlockDelta", {"delta": {"toolUse": {"input": "{}"}}}, 2),
        ("bedrock", "contentBlockDelta", {"delta": {"text": "lookup"}}, 0),
    ],
)  # fmt: skip
def test_a_tool_calls_characters_are_told_apart_from_the_answers(
    dialect: str, event: str | None, obj: dict[str, Any], tool: int
) -> None:
    info = parse_event(obj, dialect, event)
    assert info.tool_chars == tool
    assert info.output_chars >= max(tool, 1)
