"""OpenAI's Responses API as the lab serves it (``/v1/responses``): the prompt as
``instructions`` and ``input`` (a text or messages), reasoning asked by
``reasoning.effort``, usage with every stream.

The stream (:class:`ResponsesWriter`) is ``response.created`` and
``response.in_progress``; with reasoning, a ``reasoning`` item whose summary streams
one token a delta; then a ``message`` item whose ``output_text`` streams (or a
``function_call`` item whose arguments do); then
``response.completed``, or ``response.incomplete`` when the answer was cut at
``max_output_tokens``, with the whole output and the usage.
"""

from __future__ import annotations

import time
from typing import Any

from latdoc.lab.sim._call import Call
from latdoc.lab.sim._events import (
    answer_text,
    answer_token,
    arguments,
    output_text,
    output_token,
    sse,
)
from latdoc.lab.sim._writers import StreamWriter, each_token
from latdoc.lab.sim.dialects._stand_in import StandIn, effort_tokens

__all__ = ["STAND_IN", "ResponsesWriter"]

_REASONING = {"item_id": "rs_lab", "output_index": 0, "summary_index": 0}


class ResponsesWriter:
    """OpenAI Responses stream events, numbered by ``sequence_number``."""

    def __init__(self, call: Call, call_id: str, stamp: bool, cached_tokens: int) -> None:
        self.call = call
        self.id = call_id
        self.stamp = stamp
        self.cached = cached_tokens
        self.seq = 0
        self.created = int(time.time())
        self.output: list[dict[str, Any]] = []
        self.index = 1 if call.reasoning_tokens else 0
        """The output index of the answer's item."""

    def _event(self, kind: str, **fields: Any) -> bytes:
        obj = {"type": kind, **fields, "sequence_number": self.seq}
        self.seq += 1
        return sse(kind, obj, self.stamp)

    def _response(self, status: str, usage: dict[str, Any] | None) -> dict[str, Any]:
        call = self.call
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        return {
            "id": self.id, "object": "response", "created_at": self.created, "status": status,
            "model": call.model, "output": list(self.output), "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "usage": usage, "error": None,
            "incomplete_details": incomplete, "instructions": None, "metadata": {},
            "temperature": 1.0, "top_p": 1.0, "max_output_tokens": call.max_tokens,
        }  # fmt: skip

    def opening(self) -> bytes:
        created = self._event("response.created", response=self._response("in_progress", None))
        return created + self._event(
            "response.in_progress", response=self._response("in_progress", None)
        )

    def _reasoning_item(self, done: bool) -> dict[str, Any]:
        summary = [{"type": "summary_text", "text": output_text(self.call.reasoning_tokens)}]
        return {"id": "rs_lab", "type": "reasoning", "summary": summary if done else []}

    def _answer_item(self, done: bool) -> dict[str, Any]:
        call = self.call
        status = "completed" if done else "in_progress"
        if call.tool_name is not None:
            args = "".join(arguments(call, k) for k in range(call.output_tokens)) if done else ""
            return {
                "id": "fc_lab", "type": "function_call", "call_id": "call_lab",
                "name": call.tool_name, "arguments": args, "status": status,
            }  # fmt: skip
        text = answer_text(call)
        content = [{"type": "output_text", "text": text, "annotations": []}] if done else []
        return {
            "id": "msg_lab", "type": "message", "role": "assistant",
            "status": status, "content": content,
        }  # fmt: skip

    def tokens(self, first: int, count: int) -> bytes:
        return each_token(self, first, count)

    def token(self, k: int) -> bytes:
        call = self.call
        thinking = call.reasoning_tokens
        if k < thinking:
            head = b""
            if k == 0:
                item = self._reasoning_item(False)
                head = self._event("response.output_item.added", output_index=0, item=item)
                part = {"type": "summary_text", "text": ""}
                head += self._event(
                    "response.reasoning_summary_part.added", **_REASONING, part=part
                )
            delta = output_token(k)
            return head + self._event(
                "response.reasoning_summary_text.delta", **_REASONING, delta=delta
            )
        k -= thinking
        index = self.index
        head = b""
        if k == 0:
            if thinking:
                head = self._close_reasoning()
            item = self._answer_item(False)
            head += self._event("response.output_item.added", output_index=index, item=item)
            if call.tool_name is None:
                text_part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
                head += self._event(
                    "response.content_part.added",
                    item_id="msg_lab", output_index=index, content_index=0, part=text_part,
                )  # fmt: skip
        if call.tool_name is not None:
            return head + self._event(
                "response.function_call_arguments.delta",
                item_id="fc_lab", output_index=index, delta=arguments(call, k),
            )  # fmt: skip
        return head + self._event(
            "response.output_text.delta",
            item_id="msg_lab", output_index=index, content_index=0,
            delta=answer_token(call, k), logprobs=[],
        )  # fmt: skip

    def _close_reasoning(self) -> bytes:
        text = output_text(self.call.reasoning_tokens)
        item = self._reasoning_item(True)
        self.output.append(item)
        part = {"type": "summary_text", "text": text}
        out = self._event("response.reasoning_summary_text.done", **_REASONING, text=text)
        out += self._event("response.reasoning_summary_part.done", **_REASONING, part=part)
        return out + self._event("response.output_item.done", output_index=0, item=item)

    def _close_answer(self) -> bytes:
        call = self.call
        index = self.index
        item = self._answer_item(True)
        self.output.append(item)
        out = b""
        if call.tool_name is None:
            text = answer_text(call)
            where = {"item_id": "msg_lab", "output_index": index, "content_index": 0}
            part = {"type": "output_text", "text": text, "annotations": []}
            out += self._event("response.output_text.done", **where, text=text, logprobs=[])
            out += self._event("response.content_part.done", **where, part=part)
        else:
            out += self._event(
                "response.function_call_arguments.done",
                item_id="fc_lab", output_index=index, arguments=item["arguments"],
            )  # fmt: skip
        return out + self._event("response.output_item.done", output_index=index, item=item)

    def closing(self, usage: dict[str, Any], truth: dict[str, Any] | None) -> list[bytes]:
        call = self.call
        out = b""
        if call.reasoning_tokens and call.output_tokens == 0:
            out += self._close_reasoning()
        if call.output_tokens:
            out += self._close_answer()
        prompt, total = usage["prompt_tokens"], call.total_tokens
        final_usage = {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": self.cached},
            "output_tokens": total,
            "output_tokens_details": {"reasoning_tokens": call.reasoning_tokens},
            "total_tokens": prompt + total,
        }
        status = "completed" if call.finish_reason == "stop" else "incomplete"
        extra = {"lab": truth} if truth else {}
        end = self._event(
            f"response.{status}", response=self._response(status, final_usage), **extra
        )
        return [out + end]

    def malformed(self) -> bytes:
        return b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta"\n\n'

    def overloaded(self) -> bytes:
        return self._event("error", code="overloaded_error", message="Overloaded", param=None)


def _messages(data: dict[str, object]) -> object:
    given = data.get("input")
    messages = [{"role": "user", "content": given}] if isinstance(given, str) else given
    if isinstance(messages, list):
        messages = [_as_message(item) for item in messages]
    instructions = data.get("instructions")
    if isinstance(instructions, str) and isinstance(messages, list):
        return [{"role": "system", "content": instructions}, *messages]
    return messages


def _as_message(item: object) -> object:
    """An input item that is not a message, counted as one: a tool call (its arguments,
    the assistant's) and a tool's output (the tool's)."""
    if not isinstance(item, dict) or "role" in item:
        return item
    if item.get("type") == "function_call":
        return {"role": "assistant", "content": str(item.get("arguments", ""))}
    if item.get("type") == "function_call_output":
        return {"role": "tool", "content": str(item.get("output", ""))}
    return item


def _reasoning(data: dict[str, object], medium: int) -> int:
    reasoning = data.get("reasoning")
    return effort_tokens(reasoning.get("effort") if isinstance(reasoning, dict) else None, medium)


def _writer(call: Call, number: int, stamp: bool, cached_tokens: int) -> StreamWriter:
    return ResponsesWriter(call, f"resp_lab{number}", stamp, cached_tokens)


def _document(call: Call, number: int, usage: dict[str, Any], cached: int) -> dict[str, object]:
    done = call.finish_reason == "stop"
    text = answer_text(call)
    item = {"id": "msg_lab", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
    return {
        "id": f"resp_lab{number}", "object": "response", "created_at": int(time.time()),
        "status": "completed" if done else "incomplete", "model": call.model,
        "output": [item],
        "incomplete_details": None if done else {"reason": "max_output_tokens"},
        "usage": {"input_tokens": call.prompt_tokens, "output_tokens": call.total_tokens,
                  "input_tokens_details": {"cached_tokens": cached},
                  "output_tokens_details": {"reasoning_tokens": call.reasoning_tokens},
                  "total_tokens": call.prompt_tokens + call.total_tokens},
    }  # fmt: skip


STAND_IN = StandIn(
    name="responses",
    path="/v1/responses",
    messages=_messages,
    writer=_writer,
    document=_document,
    reasoning=_reasoning,
    usage_always=True,
)
