"""Amazon Bedrock's Converse API, streamed (``POST /model/{modelId}/converse-stream``).

The base URL is the regional runtime endpoint,
``https://bedrock-runtime.us-east-1.amazonaws.com``; the model (a model id such as
``anthropic.claude-3-5-haiku-20241022-v1:0``, an inference profile or an ARN) is
named in the path, URL-quoted (``:`` and ``/`` escaped), as AWS's SDKs send it.

Requests are signed with AWS Signature Version 4 by botocore's own signer
(:class:`botocore.auth.SigV4Auth`, service ``bedrock``), with the credentials of
botocore's standard chain (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and the shared files, SSO, a role …), refreshed
as they expire. The region is the one the URL's host names
(``bedrock-runtime.{region}.amazonaws.com``, which the signature must match), else
``AWS_REGION``, else ``AWS_DEFAULT_REGION`` or the profile's. A Bedrock API key in
``AWS_BEARER_TOKEN_BEDROCK`` (as the SDKs read it) is sent as ``Authorization: Bearer``
instead, unsigned. botocore is the ``bedrock`` extra.

The body is Converse's: ``messages`` (``user`` and ``assistant`` turns, each a list of
content blocks, here one ``text`` block), ``system`` (text blocks) and
``inferenceConfig.maxTokens``. A reasoning effort is Anthropic's ``thinking`` budget in
``additionalModelRequestFields``, as Claude models on Bedrock take it.

The answer is an AWS event stream (:data:`~latdoc.probe._framing.EVENT_STREAM`):
``messageStart`` (the role: no output), then for each content block
``contentBlockStart`` (a tool call's name), ``contentBlockDelta`` s and
``contentBlockStop``, then ``messageStop`` (its ``stopReason``) and ``metadata``: the
``usage`` (``inputTokens`` leaves out the prompt read from and written to the cache,
``cacheReadInputTokens`` and ``cacheWriteInputTokens``, so the prompt is the three
together, as for Anthropic) and ``metrics.latencyMs``, the service's own time for the
request, kept as the server's timing (``bedrock-latency``). A delta's ``text`` (and a
citation's) is the answer, ``reasoningContent.text`` reasoning (its signature and
redacted reasoning are no output), ``toolUse.input`` a tool call's arguments (with the
name on the block's start, the tool-call output). An exception after the 200
(``throttlingException``, ``modelStreamErrorException`` …) is a
failure with the HTTP status the API gives it (429, 424, 400, 500, 503), the model's own
status where a ``modelStreamErrorException`` names it (``originalStatusCode``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.probe._events import EventInfo, ToolPart, Usage, int_or_none, text_or_none
from latdoc.probe._eventstream import require_botocore
from latdoc.probe._framing import EVENT_STREAM
from latdoc.probe.dialects._spec import (
    BY_MAX_TOKENS,
    BY_PROMPT,
    CalledTool,
    DialectSpec,
    Foreign,
    Messages,
    Route,
    Signer,
    Tool,
    bearer_auth,
)
from latdoc.probe.dialects.anthropic import THINKING_BUDGETS

__all__ = [
    "EXCEPTION_STATUS",
    "SPEC",
    "SigV4Signer",
    "bedrock_usage",
    "parse_bedrock_event",
    "region_of",
]

EXCEPTION_STATUS: Mapping[str, int] = {
    "validationException": 400,
    "accessDeniedException": 403,
    "resourceNotFoundException": 404,
    "modelTimeoutException": 408,
    "modelStreamErrorException": 424,
    "modelErrorException": 424,
    "throttlingException": 429,
    "modelNotReadyException": 429,
    "internalServerException": 500,
    "serviceUnavailableException": 503,
}
"""The HTTP status Bedrock's API model gives each exception, by the name an exception
frame carries (``:exception-type``, the first letter lower-case as in the stream)."""

_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)
_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
_HOST = re.compile(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")
_SERVICE = "bedrock"
_LATENCY = "bedrock-latency"
"""The server-timing name of ``metrics.latencyMs``."""


def parse_bedrock_event(obj: Any, event: str | None, foreign: Foreign) -> EventInfo:
    """Interpret one event of a ConverseStream (its payload, named by ``event``)."""
    if event is not None and event not in _EVENTS:
        status = _exception_status(event, obj)
        if status is not None or event.endswith(("Exception", "Error", "Failure")):
            message = obj.get("message") if isinstance(obj, dict) else None
            text = ": ".join(str(p) for p in (event, message) if p)
            return EventInfo(error=text, error_status=status)
        return EventInfo(unknown=True)
    if not isinstance(obj, dict):
        return EventInfo(error=f"event is a JSON {type(obj).__name__}, not an object")
    if event is None:
        return EventInfo(unknown=True, other_dialect=foreign(obj, event))
    if event == "contentBlockDelta":
        return _delta(obj.get("delta"), int_or_none(obj.get("contentBlockIndex")))
    if event == "contentBlockStart":
        start = obj.get("start")
        tool = start.get("toolUse") if isinstance(start, dict) else None
        name = tool.get("name") if isinstance(tool, dict) else None
        if isinstance(name, str) and name:
            call_id = text_or_none(tool.get("toolUseId")) if isinstance(tool, dict) else None
            part = ToolPart(int_or_none(obj.get("contentBlockIndex")), name, call_id=call_id)
            return EventInfo(
                output_chars=len(name), tool_chars=len(name), text=name, tool_parts=(part,)
            )
        return EventInfo()
    if event == "messageStop":
        reason = obj.get("stopReason")
        finish = _STOP.get(reason, reason) if isinstance(reason, str) else "stop"
        return EventInfo(finish_reason=finish, ends_stream=True)
    if event == "metadata":
        metrics = obj.get("metrics")
        latency = metrics.get("latencyMs") if isinstance(metrics, dict) else None
        timing = (
            {_LATENCY: float(latency)}
            if isinstance(latency, int | float) and not isinstance(latency, bool)
            else None
        )
        return EventInfo(usage=bedrock_usage(obj.get("usage")), server_timing=timing)
    return EventInfo()  # messageStart and contentBlockStop carry no output


def _delta(delta: Any, index: int | None) -> EventInfo:
    if not isinstance(delta, dict):
        return EventInfo()
    answer: list[str] = []
    reasoning: list[str] = []
    text = delta.get("text")
    if isinstance(text, str):
        answer.append(text)
    tool = delta.get("toolUse")
    tool_input = tool.get("input") if isinstance(tool, dict) else None
    if isinstance(tool_input, str):
        answer.append(tool_input)
    thought = delta.get("reasoningContent")
    if isinstance(thought, dict) and isinstance(thought.get("text"), str):
        reasoning.append(thought["text"])
    citation = delta.get("citation")
    if isinstance(citation, dict) and isinstance(citation.get("title"), str):
        answer.append(citation["title"])
    arguments = len(tool_input) if isinstance(tool_input, str) else 0
    return EventInfo(
        output_chars=sum(map(len, answer)),
        tool_chars=arguments,
        reasoning_chars=sum(map(len, reasoning)),
        text="".join(reasoning) + "".join(answer),
        tool_parts=(ToolPart(index, None, arguments, tool_input or ""),) if arguments else (),
    )


def _exception_status(name: str, obj: Any) -> int | None:
    own = EXCEPTION_STATUS.get(name[:1].lower() + name[1:])
    original = obj.get("originalStatusCode") if isinstance(obj, dict) else None
    if own == 424 and isinstance(original, int) and 400 <= original <= 599:
        return original  # the model's own status (529: overloaded)
    return own


def bedrock_usage(raw: Any) -> Usage | None:
    """``usage``: the prompt as the fresh input and the cache's reads and writes."""
    if not isinstance(raw, dict):
        return None
    fresh = int_or_none(raw.get("inputTokens"))
    read = int_or_none(raw.get("cacheReadInputTokens"))
    written = int_or_none(raw.get("cacheWriteInputTokens"))
    return Usage(
        prompt_tokens=None if fresh is None else fresh + (read or 0) + (written or 0),
        completion_tokens=int_or_none(raw.get("outputTokens")),
        cached_prompt_tokens=read,
    )


def _body(model: str, messages: Messages, max_tokens: int, include_usage: bool) -> dict[str, Any]:
    system = [{"text": m["content"]} for m in messages if m.get("role") == "system"]
    turns = [
        {
            "role": "assistant" if m.get("role") == "assistant" else "user",
            # A tool turn (:func:`_tool_turn`) is content blocks already.
            "content": m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}],
        }
        for m in messages
        if m.get("role") != "system"
    ]
    body: dict[str, Any] = {"messages": turns}
    if system:
        body["system"] = system
    body["inferenceConfig"] = {"maxTokens": max_tokens}
    return body


def _thinking(effort: str) -> dict[str, Any]:
    budget = THINKING_BUDGETS[effort]
    thinking = (
        {"type": "disabled"} if budget is None else {"type": "enabled", "budget_tokens": budget}
    )
    return {"additionalModelRequestFields": {"thinking": thinking}}


def region_of(url: str) -> str | None:
    """The region a request to ``url`` is signed for: its host's
    (``bedrock-runtime.{region}.amazonaws.com``), else ``AWS_REGION``, else ``None``
    (then botocore's: ``AWS_DEFAULT_REGION`` or the profile's)."""
    match = _HOST.search((urlsplit(url).hostname or "").lower())
    if match:
        return match.group(1)
    return os.environ.get("AWS_REGION") or None


class SigV4Signer:
    """Signs requests with botocore's :class:`~botocore.auth.SigV4Auth`, with the
    credentials of botocore's standard chain, refreshed as they expire."""

    def __init__(self, credentials: Any, region: str) -> None:
        self._credentials = credentials
        self.region = region
        frozen = credentials.get_frozen_credentials()
        self.secrets = tuple(s for s in (frozen.access_key, frozen.token) if s)

    @classmethod
    def for_url(cls, url: str) -> SigV4Signer:
        """The signer of requests to ``url``; :class:`UsageError` without botocore, a
        credential or a region."""
        require_botocore()
        from botocore.exceptions import BotoCoreError

        aws = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))
        try:
            credentials, configured = _chain(aws)
            region = region_of(url) or configured
        except BotoCoreError as exc:
            raise UsageError(
                Message("--api bedrock: the AWS credentials cannot be read: {exc}", exc=str(exc))
            ) from None
        if credentials is None:
            raise UsageError(
                N_(
                    "--api bedrock: no AWS credentials: set AWS_ACCESS_KEY_ID and "
                    "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or a Bedrock API key in "
                    "AWS_BEARER_TOKEN_BEDROCK"
                )
            )
        if not region:
            raise UsageError(
                N_(
                    "--api bedrock: no AWS region: set AWS_REGION, or give the regional URL "
                    "https://bedrock-runtime.REGION.amazonaws.com"
                )
            )
        try:
            return cls(credentials, region)
        except BotoCoreError as exc:
            raise UsageError(
                Message("--api bedrock: the AWS credentials cannot be read: {exc}", exc=str(exc))
            ) from None

    def __call__(
        self, method: str, url: str, headers: Sequence[tuple[bytes, bytes]], body: bytes
    ) -> list[tuple[bytes, bytes]]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(
            method=method,
            url=url,
            data=body,
            headers={k.decode("latin-1"): v.decode("latin-1") for k, v in headers},
        )
        SigV4Auth(self._credentials.get_frozen_credentials(), _SERVICE, self.region).add_auth(
            request
        )
        added = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token")
        return [
            (name.lower().encode(), str(request.headers[name]).encode("latin-1"))
            for name in added
            if name in request.headers
        ]


@functools.lru_cache(maxsize=8)
def _chain(aws: tuple[tuple[str, str], ...]) -> tuple[Any, str | None]:
    """The credentials and region botocore's standard chain finds, once for each set of
    ``AWS_*`` variables (``aws``): finding them costs tens of ms, and a load sweep opens
    a session per stream. Refreshable credentials refresh themselves as they expire."""
    from botocore.session import Session

    session = Session()
    return session.get_credentials(), session.get_config_variable("region")


def _signer(api_key: str | None, url: str) -> Signer | None:
    """No signer with a Bedrock API key (a bearer token); else SigV4's."""
    require_botocore()  # the event stream needs it, signed or not
    return None if api_key else SigV4Signer.for_url(url)


def _claims(obj: dict[str, Any], event: str | None) -> bool:
    return event in _EVENTS


def _tools(tools: Sequence[Tool]) -> dict[str, Any]:
    specs = [
        {"toolSpec": t.described(name=t.name, inputSchema={"json": t.parameters})} for t in tools
    ]
    return {"toolConfig": {"tools": specs}}


def _tool_turn(
    text: str, calls: Sequence[CalledTool], results: Sequence[str]
) -> list[dict[str, Any]]:
    """The assistant's turn (its text, then a ``toolUse`` block a call) and the user's
    turn answering each with a ``toolResult`` block."""
    said: list[dict[str, Any]] = [{"text": text}] if text else []
    said += [
        {"toolUse": {"toolUseId": c.call_id, "name": c.name, "input": c.arguments_object}}
        for c in calls
    ]
    answered = [
        {"toolResult": {"toolUseId": c.call_id, "content": [{"text": result}]}}
        for c, result in zip(calls, results, strict=True)
    ]
    return [{"role": "assistant", "content": said}, {"role": "user", "content": answered}]


SPEC = DialectSpec(
    name="bedrock",
    title="Amazon Bedrock's ConverseStream",
    route=Route("/model/{model}/converse-stream"),
    key_variable="AWS_BEARER_TOKEN_BEDROCK",
    auth_headers=bearer_auth,
    body=_body,
    body_fields={
        "messages": BY_PROMPT,
        "system": BY_PROMPT,
        "inferenceConfig.maxTokens": BY_MAX_TOKENS,
    },
    parse=parse_bedrock_event,
    end_marker="a messageStop",
    claims=_claims,
    reasoning=_thinking,
    framings=(EVENT_STREAM,),
    signer=_signer,
    tools=_tools,
    tool_turn=_tool_turn,
    prompt_fields=("system", "messages"),
)
