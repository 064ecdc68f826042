"""One span's trace: its times, model, token usage, prompt size and outcome."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.probe import dialects
from latdoc.records import RequestTrace, estimate_tokens
from latdoc.workload.otlp._phases import phases
from latdoc.workload.otlp._spans import Span

_STATUS_ERROR = (2, "STATUS_CODE_ERROR")
_SDK_ERRORS = {
    "RateLimitError": 429,
    "InternalServerError": 500,
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "UnprocessableEntityError": 422,
}
"""The openai SDK's exception names (``error.type`` in its instrumentation) by status."""
_PROMPT_TEXT = re.compile(
    r"gen_ai\.prompt\.\d+\.content"
    r"|llm\.input_messages\.\d+\.message\.content"
    r"|llm\.input_messages\.\d+\.message\.contents\.\d+\.message_content\.text"
)
"""Attributes that each hold one message's text (older OpenLLMetry, OpenInference)."""
_PROMPT_JSON = ("gen_ai.input.messages", "langfuse.observation.input")
"""Attributes that hold the prompt's messages as JSON (the conventions, Langfuse)."""


@dataclass(frozen=True)
class Read:
    """One span's trace, and how its time to first token was read."""

    trace: RequestTrace
    ttft_from: str | None
    """``attribute``, ``event`` or ``chunks`` (OpenLLMetry's chunk events); ``None``."""
    control_chunk: bool = False
    """The first chunk event was taken for a chunk sent before the prefill."""


def trace_of(span: Span) -> Read:
    a = span.attributes
    start = span.at["startTimeUnixNano"].integer(0)
    end = span.at["endTimeUnixNano"].integer(start)
    operation = str(a.get("gen_ai.operation.name") or "chat")
    marks, ttft_from, control = phases(span, start, end)
    address, port = a.get("server.address"), a.get("server.port")
    url = f"https://{address}{f':{port}' if port else ''}" if address else "otlp"
    usage = _langfuse_usage(a.get("langfuse.observation.usage_details"))
    prompt = _count(
        span, ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
    )
    output = _count(
        span,
        (
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
        ),
    )
    exact = any(k in a for k in ("gen_ai.usage.output_tokens", "llm.token_count.completion"))
    if prompt is None:
        prompt = usage.get("prompt_tokens", usage.get("input"))
    if output is None:
        output = usage.get("completion_tokens", usage.get("output"))
        exact = exact or output is not None
    chars = _prompt_chars(a)
    trace = RequestTrace(
        started_at=datetime.fromtimestamp(start / 1e9, UTC),
        t0_ns=start,
        url=url,
        model=str(
            a.get("gen_ai.request.model")
            or a.get("gen_ai.response.model")
            or a.get("llm.model_name")
            or a.get("langfuse.observation.model.name")
            or ""
        ),
        dialect=_dialect_of(operation),
        http_version=_str(a.get("latdoc.http_version")),
        new_connection=_bool(a.get("latdoc.new_connection")),
        done_ns=end - start,
        prompt_tokens=prompt,
        output_tokens=output,
        output_tokens_exact=exact,
        finish_reason=_finish(
            a.get("gen_ai.response.finish_reasons") or a.get("llm.finish_reason")
        ),
        error=_error(span),
        prompt_chars=chars,
        prompt_tokens_estimated=None if chars is None else estimate_tokens(chars),
        **marks,
    )
    return Read(trace, ttft_from, control)


def _count(span: Span, names: tuple[str, ...]) -> int | None:
    """A token count, from the first of ``names`` the span has: a whole number not below
    0 (a count of another type is not read)."""
    name = next((n for n in names if n in span.attributes), None)
    if name is None:
        return None
    value = _int(span.attributes.get(name))
    if value is not None and value < 0:
        raise span.places[name].fail(f"a token count of {value}")
    return value


def _langfuse_usage(value: Any) -> dict[str, int]:
    """Langfuse's usage details (a JSON object as a string): its whole counts not below 0."""
    obj = _json(value)
    if not isinstance(obj, dict):
        return {}
    return {k: v for k, v in obj.items() if (n := _int(v)) is not None and n >= 0}


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def _prompt_chars(a: dict[str, Any]) -> int | None:
    """Characters of the prompt's text the span holds, where its instrumentation records
    the prompt (content capture on); ``None`` when it holds none."""
    for name in _PROMPT_JSON:
        messages = _json(a.get(name))
        if isinstance(messages, dict):
            messages = messages.get("messages")
        if isinstance(messages, list):
            try:
                return dialects.text_chars(messages)
            except RecursionError:
                return None
    parts = [v for k, v in a.items() if _PROMPT_TEXT.fullmatch(k) and isinstance(v, str)]
    return sum(len(p) for p in parts) if parts else None


def _dialect_of(operation: str) -> str:
    """The first dialect whose spans name ``operation`` (``chat`` for ``chat``,
    ``completions`` for ``text_completion``), else the operation itself."""
    spec = next((d for d in dialects.DIALECTS if d.otel_operation == operation), None)
    return operation if spec is None else spec.name


def _error(span: Span) -> TraceError | None:
    a = span.attributes
    status = span.at.get("status")
    code_at = status.get("code") if not status.missing else status
    kind = a.get("error.type")
    if kind is None and code_at.value not in _STATUS_ERROR:
        return None
    text = str(kind or "error")
    message_at = status.get("message") if not status.missing else status
    message = (None if message_at.missing else message_at.text()) or text
    code = _int(a.get("http.response.status_code"))
    if code is None:
        digits = text.removeprefix("http:")
        code = (
            int(digits)
            if digits.isascii() and digits.isdigit() and len(digits) <= 3
            else _SDK_ERRORS.get(text.rsplit(".", 1)[-1])
        )
    lowered = text.lower()
    if "timeout" in lowered:
        return TraceError(ErrorKind.TIMEOUT, Phase.WAIT, message)
    if "connect" in lowered:
        return TraceError(ErrorKind.CONNECT, Phase.CONNECT, message)
    return TraceError(ErrorKind.HTTP, Phase.WAIT, message, code)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _finish(value: Any) -> str | None:
    if isinstance(value, list) and value and isinstance(value[0], str):
        return value[0]
    return value if isinstance(value, str) else None
