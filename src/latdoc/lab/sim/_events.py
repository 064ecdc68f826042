"""The simulated answer and the server-sent events that carry it.

Every answer is the same word cycle, one lab token per word, so a client knows
the text and the token count of any prefix; a prompt that asks for a text back
(:data:`~latdoc.lab.sim.REPEAT`) gets that text instead
(:func:`answer_token`). The events are built from pre-encoded JSON fragments: the
streaming hot path only concatenates bytes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from starlette.types import Message

from latdoc.lab.sim._call import Call, FinishReason

__all__ = [
    "CHAT",
    "COMPLETIONS",
    "DONE",
    "OUTPUT_WORDS",
    "Events",
    "Fragments",
    "answer_text",
    "answer_token",
    "arguments",
    "output_text",
    "output_token",
    "sse",
]

OUTPUT_WORDS = (
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
)
"""The deterministic word cycle of the simulated output."""


def output_token(k: int) -> str:
    """Output token ``k`` (from 0) of every simulated answer: a space and a word."""
    return " " + OUTPUT_WORDS[k % len(OUTPUT_WORDS)]


def output_text(output_tokens: int) -> str:
    """The whole simulated answer of ``output_tokens`` tokens."""
    return "".join(output_token(k) for k in range(output_tokens))


def answer_token(call: Call, k: int) -> str:
    """Answer token ``k`` (from 0) of ``call``: its own answer's, or the word cycle's."""
    return output_token(k) if call.answer is None else call.answer[k]


def answer_text(call: Call) -> str:
    """The whole answer of ``call``: its output tokens' text."""
    if call.answer is None:
        return output_text(call.output_tokens)
    return "".join(call.answer[: call.output_tokens])


@dataclass(frozen=True)
class Fragments:
    """Pre-encoded JSON pieces of one dialect's stream chunks (after ``"choices":``).

    ``piece`` is the choices of a chunk carrying text, with ``%s`` where the text's
    JSON string goes; ``tokens`` are its pieces for each word of the cycle. ``length``
    ends an answer cut at its output limit, ``stop`` one that ended by itself.
    """

    role: bytes | None
    piece: bytes
    tokens: tuple[bytes, ...]
    length: bytes
    stop: bytes

    def finish(self, reason: FinishReason) -> bytes:
        """The last choice chunk of an answer that ended for ``reason``."""
        return self.stop if reason == "stop" else self.length

    def text(self, text: str) -> bytes:
        """The choices of a chunk carrying ``text`` (several tokens' words)."""
        return self.piece % json.dumps(text).encode()


def _token_json(k: int) -> bytes:
    return json.dumps(output_token(k)).encode()


_CHAT_PIECE = b'[{"index":0,"delta":{"content":%s},"finish_reason":null}]'
_COMPLETIONS_PIECE = b'[{"index":0,"text":%s,"logprobs":null,"finish_reason":null}]'
CHAT = Fragments(
    role=b'[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]',
    piece=_CHAT_PIECE,
    tokens=tuple(_CHAT_PIECE % _token_json(k) for k in range(len(OUTPUT_WORDS))),
    length=b'[{"index":0,"delta":{},"finish_reason":"length"}]',
    stop=b'[{"index":0,"delta":{},"finish_reason":"stop"}]',
)
COMPLETIONS = Fragments(
    role=None,
    piece=_COMPLETIONS_PIECE,
    tokens=tuple(_COMPLETIONS_PIECE % _token_json(k) for k in range(len(OUTPUT_WORDS))),
    length=b'[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]',
    stop=b'[{"index":0,"text":"","logprobs":null,"finish_reason":"stop"}]',
)
DONE = b"data: [DONE]\n\n"


class Events:
    """Builds one request's SSE events; stamps them at build time when asked."""

    __slots__ = ("head", "stamp")

    def __init__(self, call_id: str, obj: str, created: int, model: str, stamp: bool) -> None:
        self.head = b'data: {"id":"%s","object":"%s","created":%d,"model":%s,"choices":' % (
            call_id.encode(),
            obj.encode(),
            created,
            json.dumps(model).encode(),
        )
        self.stamp = stamp

    def body(self, choices: bytes, extra: bytes = b"") -> bytes:
        """The event whose ``choices`` are ``choices``, then ``extra`` (``,"key":value``)."""
        tail = b',"lab_t_ns":%d}\n\n' % time.perf_counter_ns() if self.stamp else b"}\n\n"
        return self.head + choices + extra + tail

    def message(self, choices: bytes, extra: bytes = b"") -> Message:
        """:meth:`body` as the server's message."""
        return {"type": "http.response.body", "body": self.body(choices, extra), "more_body": True}

    def malformed_body(self) -> bytes:
        """An event whose data is cut off mid-object: not valid JSON."""
        return self.head + b'[{"index":0,"delta":{"content":" lor\n\n'

    def malformed(self) -> Message:
        """:meth:`malformed_body` as the server's message."""
        return {"type": "http.response.body", "body": self.malformed_body(), "more_body": True}


def arguments(call: Call, k: int) -> str:
    """Answer token ``k`` of a tool call's arguments."""
    last = k == call.output_tokens - 1 and call.finish_reason == "stop"
    return ('{"words":"' if k == 0 else "") + output_token(k) + ('"}' if last else "")


def _dump(obj: dict[str, Any], stamp: bool) -> bytes:
    if stamp:
        obj = {**obj, "lab_t_ns": time.perf_counter_ns()}
    return json.dumps(obj, separators=(",", ":")).encode()


def sse(name: str, obj: dict[str, Any], stamp: bool = False) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (name.encode(), _dump(obj, stamp))
