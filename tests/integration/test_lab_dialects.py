"""The lab's Anthropic Messages and OpenAI Responses routes, read by the real SDKs.

If ``anthropic.messages.stream`` and ``openai.responses.create(stream=True)`` parse
every event the lab sends, accumulate its text, thinking and tool calls and report
its usage, the lab is faithful enough for latdoc's probe to be tested against it. The
chat route's usage in DeepSeek's and Moonshot's shapes, and its thinking switched off
as DashScope's and Zhipu's are, reach the OpenAI SDK as those providers' do.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from conftest import FAST, LabFactory
from latdoc import RequestTrace, Store, instrument
from latdoc.lab.sim import LabConfig, LatencyModel, UsageShape, output_text

THINKING = LatencyModel(
    prefill_base_ms=5.0, prefill_ms_per_token=0.01, decode_ms_per_token=1.0, reasoning_tokens=6
)
TOOL = {"name": "lookup", "description": "look words up", "input_schema": {"type": "object"}}


def _anthropic(base_url: str, key: str = "lab-key") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key=key, max_retries=0)


def _openai(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="lab-key", max_retries=0)


def test_anthropic_sdk_streams_thinking_then_text_with_usage(lab: LabFactory) -> None:
    with (
        lab(LabConfig(latency=THINKING)) as server,
        _anthropic(server.base_url).messages.stream(
            model="lab-sim",
            max_tokens=5,
            system="Be brief.",
            messages=[{"role": "user", "content": "Hello there"}],
        ) as stream,
    ):
        types = [event.type for event in stream]
        message = stream.get_final_message()
    assert types[0] == "message_start"
    assert types[-1] == "message_stop"
    assert {"thinking", "text", "content_block_stop", "message_delta"} <= set(types)
    thinking, text = message.content
    assert thinking.type == "thinking" and thinking.thinking == output_text(6)
    assert text.type == "text" and text.text == output_text(5)
    assert message.stop_reason == "max_tokens"  # every lab answer runs to its limit
    assert message.usage.output_tokens == 11
    assert message.usage.output_tokens_details is not None
    assert message.usage.output_tokens_details.thinking_tokens == 6
    assert message.usage.input_tokens > 0


def test_anthropic_sdk_reads_a_tool_call_and_the_output_limit(lab: LabFactory) -> None:
    config = LabConfig(latency=FAST, answer_tokens=3)
    with lab(config) as server:
        client = _anthropic(server.base_url)
        with client.messages.stream(
            model="lab-sim",
            max_tokens=8,
            tools=[TOOL],  # type: ignore[list-item]
            messages=[{"role": "user", "content": "look it up"}],
        ) as stream:
            called = stream.get_final_message()
        with client.messages.stream(
            model="lab-sim", max_tokens=2, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            cut = stream.get_final_message()
    (block,) = called.content
    assert block.type == "tool_use" and block.name == "lookup"
    assert block.input == {"words": output_text(3)}
    assert called.stop_reason == "tool_use"
    assert cut.stop_reason == "max_tokens"


def test_anthropic_sdk_raises_the_overloaded_error_event(lab: LabFactory) -> None:
    config = LabConfig(latency=FAST, fault_after_tokens=0)
    with lab(config) as server:
        client = _anthropic(server.base_url)
        stream = client.messages.stream(
            model="lab-sim",
            max_tokens=4,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-lab-fault": "overloaded"},
        )
        with pytest.raises(anthropic.APIStatusError, match="overloaded_error"), stream as events:
            events.until_done()


def test_anthropic_route_wants_its_own_key_header_and_error_body(lab: LabFactory) -> None:
    config = LabConfig(latency=FAST, api_key="right")
    with lab(config) as server:
        with pytest.raises(anthropic.AuthenticationError) as refused:
            _anthropic(server.base_url, key="wrong").messages.create(
                model="lab-sim", max_tokens=2, messages=[{"role": "user", "content": "hi"}]
            )
        answer = _anthropic(server.base_url, key="right").messages.create(
            model="lab-sim", max_tokens=2, messages=[{"role": "user", "content": "hi"}]
        )
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["error"]["type"] == "authentication_error"
    assert answer.content[0].type == "text" and answer.usage.output_tokens == 2


def test_openai_sdk_streams_a_response_with_its_reasoning_summary(lab: LabFactory) -> None:
    with lab(LabConfig(latency=THINKING, answer_tokens=4)) as server:
        stream = _openai(server.base_url).responses.create(
            model="lab-sim",
            input="Hello there",
            max_output_tokens=4,
            reasoning={"effort": "high"},
            stream=True,
        )
        events = list(stream)
    types = [e.type for e in events]
    assert types[0] == "response.created"
    assert types[-1] == "response.completed"
    summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    answer = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert summary == output_text(12)
    assert answer == output_text(4)
    done = events[-1]
    assert done.type == "response.completed"
    assert done.response.output_text == output_text(4)
    usage = done.response.usage
    assert usage is not None
    assert usage.output_tokens == 16
    assert usage.output_tokens_details.reasoning_tokens == 12
    assert [e.sequence_number for e in events] == list(range(len(events)))


def test_openai_sdk_streams_a_function_call_and_an_incomplete_response(lab: LabFactory) -> None:
    config = LabConfig(latency=FAST, answer_tokens=2)
    with lab(config) as server:
        client = _openai(server.base_url)
        called = list(
            client.responses.create(
                model="lab-sim",
                input="look it up",
                tools=[{"type": "function", "name": "lookup", "parameters": {}, "strict": False}],
                stream=True,
            )
        )
        cut = list(
            client.responses.create(model="lab-sim", input="hi", max_output_tokens=1, stream=True)
        )
    args = "".join(e.delta for e in called if e.type == "response.function_call_arguments.delta")
    assert json.loads(args) == {"words": output_text(2)}
    assert called[-1].type == "response.completed"
    assert called[-1].response.output[0].type == "function_call"
    assert cut[-1].type == "response.incomplete"
    assert cut[-1].response.incomplete_details is not None
    assert cut[-1].response.incomplete_details.reason == "max_output_tokens"


def test_chat_reasoning_content_and_usage_details_reach_the_openai_sdk(lab: LabFactory) -> None:
    with lab(LabConfig(latency=THINKING)) as server:
        chunks = list(
            _openai(server.base_url).chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=3,
                reasoning_effort="low",
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    thoughts = [
        c.choices[0].delta.model_extra.get("reasoning_content") for c in chunks if c.choices
    ]
    assert "".join(t for t in thoughts if t) == output_text(2)
    usage = chunks[-1].usage
    assert usage is not None and usage.completion_tokens == 5
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 2


LONG = " ".join(f"word{k}" for k in range(80))
"""A prompt of five full blocks of the lab's prefix cache, and a few tokens more."""


def _chat_twice(base_url: str) -> list[list[Any]]:
    """The chunks of the same streamed chat request sent twice, the second's prefix
    cached by the first."""
    client = _openai(base_url)
    return [
        list(
            client.chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": LONG}],
                max_tokens=2,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        for _ in range(2)
    ]


def test_chat_usage_in_deepseeks_shape_reaches_the_openai_sdk(lab: LabFactory) -> None:
    config = LabConfig(latency=THINKING, prefix_cache=True, usage_shape=UsageShape.DEEPSEEK)
    with lab(config) as server:
        usages = [chunks[-1].usage for chunks in _chat_twice(server.base_url)]
    assert all(u.prompt_tokens_details is None for u in usages)
    hits = [u.model_extra["prompt_cache_hit_tokens"] for u in usages]
    misses = [u.model_extra["prompt_cache_miss_tokens"] for u in usages]
    assert hits == [0, 80]
    assert [hit + miss for hit, miss in zip(hits, misses, strict=True)] == [
        u.prompt_tokens for u in usages
    ]
    assert usages[1].completion_tokens_details.reasoning_tokens == 6


def test_chat_usage_in_moonshots_shape_is_in_the_finishing_choice(lab: LabFactory) -> None:
    config = LabConfig(latency=THINKING, prefix_cache=True, usage_shape=UsageShape.MOONSHOT)
    with lab(config) as server:
        answers = _chat_twice(server.base_url)
    for chunks, cached in zip(answers, (0, 80), strict=True):
        assert all(chunk.usage is None for chunk in chunks)
        last = chunks[-1].choices[0]
        assert last.finish_reason == "length"
        usage = last.model_extra["usage"]
        assert usage["cached_tokens"] == cached and usage["completion_tokens"] == 6 + 2


@pytest.mark.parametrize(
    "switch", [{"enable_thinking": False}, {"thinking": {"type": "disabled"}}], ids=str
)
def test_a_thinking_switch_turned_off_thinks_not(
    lab: LabFactory, switch: dict[str, object]
) -> None:
    with lab(LabConfig(latency=THINKING)) as server:
        chunks = list(
            _openai(server.base_url).chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=3,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=switch,
            )
        )
    assert not any(
        c.choices and c.choices[0].delta.model_extra.get("reasoning_content") for c in chunks
    )
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 3


def test_an_instrumented_anthropic_client_keeps_its_thinking_apart(
    lab: LabFactory, tmp_path: Path
) -> None:
    async def go(base_url: str) -> tuple[str, list[RequestTrace]]:
        client = anthropic.AsyncAnthropic(
            base_url=base_url.removesuffix("/v1"), api_key="sk-ant-secret", max_retries=0
        )
        with Store(tmp_path / "s.db") as store, instrument(client, store=store) as inst:
            async with client.messages.stream(
                model="lab-sim", max_tokens=3, messages=[{"role": "user", "content": "hi"}]
            ) as stream:
                text = await stream.get_final_text()
            run_id = inst.run_id
        with Store(tmp_path / "s.db") as store:
            _, samples, _ = store.load_run(run_id)
        await client.close()
        return text, [s.trace for s in samples]

    with lab(LabConfig(latency=THINKING)) as server:
        text, (trace,) = asyncio.run(go(server.base_url))
    assert text == output_text(3)
    assert trace.dialect == "anthropic" and trace.error is None, trace.error
    assert trace.reasoning_tokens == 6 and trace.output_tokens == 9
    assert trace.first_token_ns == trace.first_reasoning_ns
    assert trace.first_answer_ns is not None and trace.reasoning_ms is not None
