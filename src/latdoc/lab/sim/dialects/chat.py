"""OpenAI chat completions as the lab serves them (``/v1/chat/completions``): the
prompt in ``messages``, reasoning asked by ``reasoning_effort`` and streamed as
``delta.reasoning_content``, usage when ``stream_options.include_usage`` asks for it
(worded as ``LabConfig.usage_shape`` says). Thinking is turned off as OpenAI-compatible
providers of hybrid models turn it off: ``enable_thinking: false`` (DashScope,
SiliconFlow) or ``thinking: {"type": "disabled"}`` (Zhipu, Ark).
"""

from __future__ import annotations

import time
from typing import Any

from latdoc.lab.sim._call import Call
from latdoc.lab.sim._events import CHAT, answer_text, arguments
from latdoc.lab.sim._writers import ChatWriter, StreamWriter
from latdoc.lab.sim.dialects._stand_in import StandIn, effort_tokens

__all__ = ["STAND_IN", "openai_document"]


def openai_document(
    call: Call, call_id: str, obj: str, choice: dict[str, object], usage: dict[str, Any]
) -> dict[str, object]:
    """A whole chat or completions answer: its ``choice`` (the text) finished, with usage."""
    choice.update(logprobs=None, finish_reason=call.finish_reason)
    return {
        "id": call_id,
        "object": obj,
        "created": int(time.time()),
        "model": call.model,
        "choices": [choice],
        "usage": usage,
    }


def _writer(call: Call, number: int, stamp: bool, cached_tokens: int) -> StreamWriter:
    return ChatWriter(call, f"chatcmpl-lab{number}", stamp, CHAT, "chat.completion.chunk")


def _document(call: Call, number: int, usage: dict[str, Any], cached: int) -> dict[str, object]:
    message: dict[str, object] = {"role": "assistant", "content": answer_text(call)}
    if call.tool_name is not None:
        words = "".join(arguments(call, k) for k in range(call.output_tokens))
        function = {"name": call.tool_name, "arguments": words}
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_lab", "type": "function", "function": function}
        ]}  # fmt: skip
    choice: dict[str, object] = {"index": 0, "message": message}
    document = openai_document(call, f"chatcmpl-lab{number}", "chat.completion", choice, usage)
    if call.tool_name is not None and call.finish_reason == "stop":
        choice["finish_reason"] = "tool_calls"
    return document


def _reasoning(data: dict[str, object], medium: int) -> int:
    """The reasoning tokens a request asks for: none where its thinking switch is off,
    else as its ``reasoning_effort`` asks."""
    thinking = data.get("thinking")
    switched_off = data.get("enable_thinking") is False or (
        isinstance(thinking, dict) and thinking.get("type") == "disabled"
    )
    return 0 if switched_off else effort_tokens(data.get("reasoning_effort"), medium)


STAND_IN = StandIn(
    name="chat",
    path="/v1/chat/completions",
    messages=lambda data: data.get("messages"),
    writer=_writer,
    document=_document,
    reasoning=_reasoning,
    prompt_param="messages",
)
