"""``--tools``: one file of tool definitions, in any API's shape, offered in each dialect's
own; and the tool calls a response streams, read into one record whatever the dialect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from latdoc import Endpoint
from latdoc.errors import UsageError
from latdoc.probe import (
    CalledTool,
    Recorder,
    SSEEvent,
    StreamState,
    Tool,
    dialects,
    load_tools,
    parse_event,
    parse_tools,
)
from latdoc.probe.dialects import DialectSpec
from latdoc.workload import answer_of

LOOKUP = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}

DEFINED = {"name": "lookup", "description": "Find"}

SHAPES: dict[str, Any] = {
    "chat": {"type": "function", "function": {**DEFINED, "parameters": LOOKUP}},
    "responses": {"type": "function", **DEFINED, "parameters": LOOKUP},
    "anthropic": {**DEFINED, "input_schema": LOOKUP},
    "gemini": {"functionDeclarations": [{**DEFINED, "parameters": LOOKUP}]},
    "bedrock": {"toolSpec": {**DEFINED, "inputSchema": {"json": LOOKUP}}},
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_tool_in_any_apis_shape_reads_as_the_same_tool(shape: str) -> None:
    (tool,) = parse_tools(json.dumps([SHAPES[shape]]))
    assert tool == Tool("lookup", "Find", LOOKUP)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_dialect_offers_the_tool_in_the_shape_its_api_takes(shape: str) -> None:
    """What a dialect writes is what the same API's own shape reads back as."""
    spec = dialects.resolve(shape)
    tool = Tool("lookup", "Find", LOOKUP)
    written = spec.tool_fields([tool])
    listed = written["toolConfig"]["tools"] if "toolConfig" in written else written["tools"]
    assert listed == [SHAPES[shape]]


def test_tools_without_a_description_or_parameters_take_an_empty_object() -> None:
    (tool,) = parse_tools('{"tools": [{"name": "now"}]}')
    assert tool.description is None and tool.parameters == {"type": "object", "properties": {}}
    assert dialects.chat.SPEC.tool_fields([tool]) == {
        "tools": [{"type": "function", "function": {"name": "now", "parameters": tool.parameters}}]
    }


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "not valid JSON"),
        ("[]", "expected a JSON list of tools"),
        ('{"name": "x"}', "expected a JSON list of tools"),
        ('["lookup"]', "tool 1 is not a JSON object"),
        ('[{"description": "no name"}]', "tool 1 needs a name"),
        ('[{"name": "has space"}]', "tool 1 needs a name"),
        ('[{"name": "a", "parameters": {"type": "string"}}]', "must be a JSON Schema object"),
        ('[{"name": "a", "description": 3}]', "its description is not text"),
        ('[{"name": "a"}, {"name": "a"}]', "tool 'a' is defined twice"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_a_bad_tools_file_is_one_clear_line(text: str, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        parse_tools(text)


def test_a_tools_file_names_itself_in_its_error(tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    with pytest.raises(UsageError, match=f"tools file not found: {missing}"):
        load_tools(str(missing))
    bad = tmp_path / "bad.json"
    bad.write_text('[{"name": "a"}, {"name": "a"}]')
    with pytest.raises(UsageError, match=f"tools file {bad}: tool 'a' is defined twice"):
        load_tools(str(bad))


def test_a_dialect_without_tool_calls_refuses_tools_before_sending() -> None:
    with pytest.raises(UsageError, match="the completions dialect has no tool calls"):
        Endpoint("http://127.0.0.1:1/v1", "m", "completions", tools=(Tool("lookup"),))


def _sse(obj: dict[str, Any], event: str | None = None) -> SSEEvent:
    return SSEEvent(json.dumps(obj), event, None, 0)


def _read(spec: DialectSpec, events: list[SSEEvent]) -> StreamState:
    """The state after ``events``, the ``i``-th arriving at ``i`` ns."""
    state = StreamState(0, None, dialect=spec)
    rec = Recorder()
    for t, event in enumerate(events, 1):
        state.on_event(SSEEvent(event.data, event.event, None, t), rec)
    return state


def _chat_call(index: int, *, name: str | None = None, arguments: str = "") -> SSEEvent:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    call = {"index": index, "function": function}
    return _sse({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})


def test_parallel_chat_tool_calls_are_kept_apart_by_their_index() -> None:
    state = _read(
        dialects.chat.SPEC,
        [
            _sse({"id": "c", "choices": [{"index": 0, "delta": {"content": "Let me look."}}]}),
            _chat_call(0, name="lookup"),
            _chat_call(0, arguments='{"q":'),
            _chat_call(1, name="weather", arguments='{"city"'),
            _chat_call(0, arguments='"x"}'),
            _chat_call(1, arguments=':"Oslo"}'),
        ],
    )
    assert state.first_token == state.first_answer == 1 and state.first_tool_call == 2
    assert state.tool_calls == {0: ["lookup", 9, 2, 5], 1: ["weather", 15, 4, 6]}


def test_an_anthropic_tool_use_block_is_named_at_its_start_and_ends_at_its_last_delta() -> None:
    def delta(partial: str) -> SSEEvent:
        d = {"type": "input_json_delta", "partial_json": partial}
        return _sse({"type": "content_block_delta", "index": 1, "delta": d})

    block = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}
    state = _read(
        dialects.anthropic.SPEC,
        [
            _sse({"type": "content_block_start", "index": 1, "content_block": block}),
            delta(""),
            delta('{"q": '),
            delta('"x"}'),
            _sse({"type": "content_block_stop", "index": 1}),
        ],
    )
    assert state.first_tool_call == state.first_token == 1
    assert state.tool_calls == {1: ["lookup", 10, 1, 4]}


ARGUMENTS = "response.function_call_arguments.delta"


def test_a_responses_function_call_is_named_by_its_item_before_any_output() -> None:
    item = {"type": "function_call", "name": "lookup", "call_id": "c1", "arguments": ""}
    state = _read(
        dialects.responses.SPEC,
        [
            _sse({"type": "response.output_item.added", "output_index": 0, "item": item}),
            _sse({"type": ARGUMENTS, "output_index": 0, "delta": '{"q":"x"}'}),
        ],
    )
    assert state.first_token == state.first_tool_call == 2
    assert state.tool_calls == {0: ["lookup", 9, 1, 2]}


def test_gemini_function_calls_are_each_a_whole_call() -> None:
    calls = [{"functionCall": {"name": n, "args": {"q": n}}} for n in ("a", "bb")]
    frame = {"candidates": [{"content": {"role": "model", "parts": calls}}]}
    state = _read(dialects.gemini.SPEC, [_sse(frame)])
    assert list(state.tool_calls.values()) == [["a", 9, 1, 1], ["bb", 10, 1, 1]]


def test_a_stream_that_called_a_tool_and_stopped_ended_for_the_call() -> None:
    """Gemini says STOP in a frame after the call's: the stream's finish is the call's."""
    call = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "a"}}]}}]}
    end = {"candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": "STOP"}]}
    assert _read(dialects.gemini.SPEC, [_sse(call), _sse(end)]).finish_reason == "tool_calls"
    text = {"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}
    assert _read(dialects.gemini.SPEC, [_sse(text), _sse(end)]).finish_reason == "stop"


def test_a_bedrock_tool_use_block_is_read_from_its_start_and_input_deltas() -> None:
    start = {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t", "name": "lookup"}}}
    delta = {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"q":"x"}'}}}
    state = _read(
        dialects.bedrock.SPEC,
        [_sse(start, "contentBlockStart"), _sse(delta, "contentBlockDelta")],
    )
    assert state.first_token == state.first_tool_call == 1
    assert state.tool_calls == {0: ["lookup", 9, 1, 2]}


def test_a_text_answer_has_no_tool_calls() -> None:
    state = _read(
        dialects.chat.SPEC,
        [_sse({"id": "c", "choices": [{"index": 0, "delta": {"content": "Hi"}}]})],
    )
    assert state.tool_calls == {} and state.first_tool_call is None


CALL = CalledTool("c1", "lookup", '{"q": "x"}')


def test_each_dialect_answers_a_tool_call_in_its_apis_shape() -> None:
    chat = dialects.chat.SPEC.tool_turn
    anthropic = dialects.anthropic.SPEC.tool_turn
    responses = dialects.responses.SPEC.tool_turn
    assert chat is not None and anthropic is not None and responses is not None
    function = {"name": "lookup", "arguments": '{"q": "x"}'}
    assert chat("", [CALL], ["found"]) == [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": function}]},
        {"role": "tool", "tool_call_id": "c1", "content": "found"},
    ]  # fmt: skip
    assert anthropic("Let me look.", [CALL], ["found"]) == [
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": "x"}},
        ]},
        {"role": "user",
         "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "found"}]},
    ]  # fmt: skip
    assert responses("", [CALL], ["found"]) == [
        {"type": "function_call", "call_id": "c1", **function},
        {"type": "function_call_output", "call_id": "c1", "output": "found"},
    ]
    gemini = dialects.gemini.SPEC.tool_turn
    bedrock = dialects.bedrock.SPEC.tool_turn
    assert gemini is not None and bedrock is not None
    assert dialects.vertex.SPEC.tool_turn is gemini
    assert gemini("", [CALL], ["found"]) == [
        {"role": "assistant", "parts": [{"functionCall": {"name": "lookup", "args": {"q": "x"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "lookup", "response": {"result": "found"}}}]},
    ]  # fmt: skip
    assert bedrock("Let me look.", [CALL], ["found"]) == [
        {"role": "assistant", "content": [
            {"text": "Let me look."},
            {"toolUse": {"toolUseId": "c1", "name": "lookup", "input": {"q": "x"}}},
        ]},
        {"role": "user",
         "content": [{"toolResult": {"toolUseId": "c1", "content": [{"text": "found"}]}}]},
    ]  # fmt: skip
    assert dialects.completions.SPEC.tool_turn is None  # the replay refuses it


def test_a_tool_turn_goes_into_the_body_as_its_api_takes_it() -> None:
    """Gemini's and Bedrock's bodies keep a turn's parts and content blocks whole."""
    said = {"role": "user", "content": "look it up"}
    for spec, key in ((dialects.gemini.SPEC, "contents"), (dialects.bedrock.SPEC, "messages")):
        assert spec.tool_turn is not None
        turn = spec.tool_turn("", [CALL], ["found"])
        body = spec.body("m", [said, *turn], 16, False)
        inner = "parts" if key == "contents" else "content"
        assert [t[inner] for t in body[key][1:]] == [t[inner] for t in turn]
        assert body[key][0][inner] == [{"text": "look it up"}]
        assert body[key][1]["role"] == ("model" if key == "contents" else "assistant")


@pytest.mark.parametrize(
    ("name", "events"),
    [
        ("chat", [
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1",
             "function": {"name": "lookup", "arguments": '{"q": '}}]}}]},
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
             "function": {"arguments": '"x"}'}}]}}]},
        ]),
        ("anthropic", [
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "tool_use", "id": "c1", "name": "lookup", "input": {}}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "input_json_delta", "partial_json": '{"q": "x"}'}},
        ]),
        ("responses", [
            {"type": "response.output_item.added", "output_index": 0,
             "item": {"type": "function_call", "call_id": "c1", "name": "lookup"}},
            {"type": "response.function_call_arguments.delta", "output_index": 0,
             "delta": '{"q": "x"}'},
        ]),
    ],
)  # fmt: skip
def test_an_agents_replay_keeps_each_call_to_answer_it(
    name: str, events: list[dict[str, Any]]
) -> None:
    calls: dict[object, dict[str, str]] = {}
    text: list[str] = []
    hook = answer_of(text, calls)
    for event in events:
        hook(parse_event(event, dialects.resolve(name)), 0)
    assert list(calls.values()) == [{"id": "c1", "name": "lookup", "arguments": '{"q": "x"}'}]
    # A tool call's name and arguments are not the answer's text.
    assert "".join(text) == ""


def test_the_answers_text_is_kept_without_its_reasoning_or_its_tool_calls() -> None:
    """Bedrock's events are named outside their JSON: read by the dialect as the stream
    came, its text and tool call are told apart as in every other dialect."""
    bedrock = dialects.resolve("bedrock")
    chat = dialects.resolve("chat")
    text: list[str] = []
    calls: dict[object, dict[str, str]] = {}
    hook = answer_of(text, calls)
    events = [
        (chat, None, {"choices": [{"index": 0, "delta": {"reasoning_content": "hmm "}}]}),
        (chat, None, {"choices": [{"index": 0, "delta": {"content": "Let me look."}}]}),
        (bedrock, "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": " Now."}}),
        (bedrock, "contentBlockStart", {"contentBlockIndex": 1, "start": {
            "toolUse": {"toolUseId": "t1", "name": "lookup"}}}),
        (bedrock, "contentBlockDelta", {"contentBlockIndex": 1, "delta": {
            "toolUse": {"input": '{"q": 1}'}}}),
    ]  # fmt: skip
    for dialect, name, obj in events:
        hook(parse_event(obj, dialect, name), 0)
    assert "".join(text) == "Let me look. Now."
    assert list(calls.values()) == [{"id": "t1", "name": "lookup", "arguments": '{"q": 1}'}]
