"""Amazon Bedrock's ConverseStream as the lab serves it (``/model/{modelId}/converse-stream``,
and under ``/v1``, where the built-in endpoint's base URL ends).

A request is signed with AWS Signature Version 4: the lab checks the ``Authorization``
header's shape (``AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/bedrock/aws4_request,
SignedHeaders=…;host;…, Signature=<64 hex>``) and ``X-Amz-Date``, not the signature
itself; with a lab key the credential's access key id must be that key. A Bedrock API
key as ``Authorization: Bearer`` is taken too. Refusals are AWS's: ``403``
``MissingAuthenticationTokenException`` without the header,
``IncompleteSignatureException`` for one of another shape,
``UnrecognizedClientException`` for another key; every error names its type in
``x-amzn-ErrorType`` and says ``{"message": …}``, as the service does, so boto3 raises
the same exception classes.

The body is Converse's: ``messages`` (turns of content blocks, their ``text`` read),
``system`` text blocks, ``inferenceConfig.maxTokens``; reasoning is
``additionalModelRequestFields.thinking`` (``disabled``, or its ``budget_tokens``), as
Claude on Bedrock takes it. The route always streams.

The stream (:class:`BedrockWriter`) is binary ``application/vnd.amazon.eventstream``
messages (:func:`frame`: the prelude with both lengths and its CRC32, the headers
``:event-type``, ``:content-type`` and ``:message-type``, the JSON payload, the message
CRC32): ``messageStart`` with the headers, then one ``contentBlockDelta`` a token
(reasoning as ``reasoningContent.text``, its block closed with a signature before the
answer's; a request with ``toolConfig`` is answered with a call to its first tool: a
``contentBlockStart`` naming it, its arguments as ``toolUse.input`` deltas),
``contentBlockStop``, ``messageStop`` (``end_turn``, ``tool_use`` or ``max_tokens``) and
``metadata``: the ``usage`` (``inputTokens`` without the prompt the prefix cache
served, which is ``cacheReadInputTokens``) and ``metrics.latencyMs``, the lab's time
from the request's slot to its last event. The ``overloaded`` fault is an exception
message after the 200 (``serviceUnavailableException``), ``malformed`` a message whose
JSON payload is cut off (its CRCs right).
"""

from __future__ import annotations

import json
import re
import struct
import time
import zlib
from typing import Any

from latdoc.lab.sim._call import ApiError, Call
from latdoc.lab.sim._events import answer_text, answer_token, arguments, output_token
from latdoc.lab.sim._writers import StreamWriter, each_token
from latdoc.lab.sim.dialects._stand_in import Authorized, Headers, StandIn

__all__ = ["MEDIA_TYPE", "STAND_IN", "BedrockWriter", "frame"]

MEDIA_TYPE = b"application/vnd.amazon.eventstream"

_SIGV4 = re.compile(
    rb"AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8})/([a-z0-9-]+)/bedrock/aws4_request,"
    rb" ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})"
)
_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
_STOP = {"stop": "end_turn", "length": "max_tokens"}


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: prelude (total length, headers length, CRC32 of the
    two), string headers, payload, CRC32 of all before it."""
    encoded = b"".join(
        struct.pack(">B", len(name))
        + name.encode()
        + b"\x07"
        + struct.pack(">H", len(value))
        + value.encode()
        for name, value in headers.items()
    )
    prelude = struct.pack(">II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    head = prelude + struct.pack(">I", zlib.crc32(prelude))
    message = head + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _event(name: str, payload: bytes) -> bytes:
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, payload)


class BedrockWriter:
    """ConverseStream's events, each one event-stream message."""

    def __init__(self, call: Call, stamp: bool, cached_tokens: int) -> None:
        self.call = call
        self.stamp = stamp
        self.cached = cached_tokens
        self.started_ns = time.perf_counter_ns()

    def _send(self, name: str, obj: dict[str, Any]) -> bytes:
        if self.stamp:
            obj["lab_t_ns"] = time.perf_counter_ns()
        obj.setdefault("p", "abcdefghijklmnop"[: 4 + len(name) % 12])  # Bedrock's padding
        return _event(name, json.dumps(obj, separators=(",", ":")).encode())

    def opening(self) -> bytes:
        return self._send("messageStart", {"role": "assistant"})

    def tokens(self, first: int, count: int) -> bytes:
        return each_token(self, first, count)

    def token(self, k: int) -> bytes:
        thinking = self.call.reasoning_tokens
        if k < thinking:
            delta = {"reasoningContent": {"text": output_token(k)}}
            return self._send("contentBlockDelta", {"contentBlockIndex": 0, "delta": delta})
        head = b""
        if k == thinking and thinking:
            signed = {"reasoningContent": {"signature": "lab-signature"}}
            head = self._send("contentBlockDelta", {"contentBlockIndex": 0, "delta": signed})
            head += self._send("contentBlockStop", {"contentBlockIndex": 0})
        index = 1 if thinking else 0
        name = self.call.tool_name
        if name is None:
            text: dict[str, Any] = {"text": answer_token(self.call, k - thinking)}
            return head + self._send(
                "contentBlockDelta", {"contentBlockIndex": index, "delta": text}
            )
        if k == thinking:
            start = {"toolUse": {"toolUseId": "tooluse_lab", "name": name}}
            head += self._send("contentBlockStart", {"contentBlockIndex": index, "start": start})
        delta = {"toolUse": {"input": arguments(self.call, k - thinking)}}
        return head + self._send("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})

    def closing(self, usage: dict[str, Any], truth: dict[str, Any] | None) -> list[bytes]:
        call = self.call
        index = 1 if call.reasoning_tokens else 0
        stop = self._send("contentBlockStop", {"contentBlockIndex": index})
        reason = _STOP[call.finish_reason]
        if call.tool_name is not None and call.finish_reason == "stop":
            reason = "tool_use"
        stop += self._send("messageStop", {"stopReason": reason})
        tokens: dict[str, Any] = {
            "inputTokens": call.prompt_tokens - self.cached,
            "outputTokens": call.total_tokens,
            "totalTokens": call.prompt_tokens + call.total_tokens,
        }
        if self.cached:
            tokens["cacheReadInputTokens"] = self.cached
            tokens["cacheWriteInputTokens"] = 0
        latency = (time.perf_counter_ns() - self.started_ns) // 1_000_000
        metadata: dict[str, Any] = {"usage": tokens, "metrics": {"latencyMs": latency}}
        if truth:
            metadata["lab"] = truth
        return [stop, self._send("metadata", metadata)]

    def malformed(self) -> bytes:
        return _event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":')

    def overloaded(self) -> bytes:
        headers = {
            ":exception-type": "serviceUnavailableException",
            ":content-type": "application/json",
            ":message-type": "exception",
        }
        return frame(headers, b'{"message":"Bedrock is unable to process your request."}')


def _check_key(header: Headers, authorized: Authorized) -> None:
    """A SigV4 ``Authorization`` of the right shape (its access key id the lab's key), or
    a Bedrock API key as a bearer token."""
    auth = header(b"authorization")
    if auth is None:
        raise ApiError(
            403, "Missing Authentication Token", type_="MissingAuthenticationTokenException"
        )
    if auth.startswith(b"Bearer "):
        if authorized(auth):
            return
        raise ApiError(
            403,
            "Invalid API Key format: Must start with pre-defined prefix",
            type_="AccessDeniedException",
        )
    signed = _SIGV4.fullmatch(auth)
    if (
        signed is None
        or header(b"x-amz-date") is None
        or b"host" not in signed.group(4).split(b";")
    ):
        raise ApiError(
            403,
            "Authorization header requires 'Credential', 'Signature', 'SignedHeaders' "
            "(with host) parameters and an 'X-Amz-Date' header.",
            type_="IncompleteSignatureException",
        )
    if not authorized(b"Bearer " + signed.group(1)):
        raise ApiError(
            403,
            "The security token included in the request is invalid.",
            type_="UnrecognizedClientException",
        )


def _type_of(error: ApiError) -> str:
    named = json.loads(error.body)["error"].get("type")
    if isinstance(named, str) and named.endswith("Exception"):
        return named
    return _TYPES.get(
        error.status, "InternalServerException" if error.status >= 500 else "ValidationException"
    )


def _error_body(error: ApiError) -> bytes:
    """AWS's error body: ``{"message": …}``; the type goes in ``x-amzn-ErrorType``."""
    return json.dumps({"message": error.message}).encode()


def _error_headers(error: ApiError) -> list[tuple[bytes, bytes]]:
    return [(b"x-amzn-errortype", _type_of(error).encode())]


def _field(data: dict[str, object], outer: str, inner: str) -> object:
    holder = data.get(outer)
    return holder.get(inner) if isinstance(holder, dict) else None


def _messages(data: dict[str, object]) -> object:
    """``system`` and ``messages`` as chat messages, their text blocks joined."""
    turns = data.get("messages")
    if not isinstance(turns, list):
        return turns
    messages: list[object] = []
    system = data.get("system")
    if isinstance(system, list):
        messages.append({"role": "system", "content": _text(system)})
    for turn in turns:
        if not isinstance(turn, dict):
            messages.append(turn)
            continue
        content = turn.get("content")
        if not isinstance(content, list):
            raise ApiError(
                400,
                "1 validation error detected: Value at 'messages.content' "
                "failed to satisfy constraint: Member must not be null",
            )
        messages.append({"role": turn.get("role"), "content": _text(content)})
    return messages


def _text(blocks: list[Any]) -> str:
    return "".join(
        b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)
    )


def _reasoning(data: dict[str, object], medium: int) -> int:
    thinking = _field(data, "additionalModelRequestFields", "thinking")
    if not isinstance(thinking, dict):
        return medium
    if thinking.get("type") == "disabled":
        return 0
    budget = thinking.get("budget_tokens")
    if isinstance(budget, int) and not isinstance(budget, bool):
        return max(0, min(medium, budget))
    return medium


def _limit(data: dict[str, object]) -> tuple[str, object]:
    return "inferenceConfig.maxTokens", _field(data, "inferenceConfig", "maxTokens")


def _writer(call: Call, number: int, stamp: bool, cached_tokens: int) -> StreamWriter:
    return BedrockWriter(call, stamp, cached_tokens)


def _document(call: Call, number: int, usage: dict[str, Any], cached: int) -> dict[str, object]:
    """A whole Converse response."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": answer_text(call)}]}},
        "stopReason": _STOP[call.finish_reason],
        "usage": {
            "inputTokens": call.prompt_tokens - cached,
            "outputTokens": call.total_tokens,
            "totalTokens": call.prompt_tokens + call.total_tokens,
        },
        "metrics": {"latencyMs": 0},
    }


STAND_IN = StandIn(
    name="bedrock",
    path="/model/{model}/converse-stream",
    also_paths=("/v1/model/{model}/converse-stream",),
    messages=_messages,
    writer=_writer,
    document=_document,
    reasoning=_reasoning,
    prompt_param="messages",
    streams=True,
    usage_always=True,
    check_key=_check_key,
    error_body=_error_body,
    error_headers=_error_headers,
    output_limit=_limit,
    media_type=MEDIA_TYPE,
)
