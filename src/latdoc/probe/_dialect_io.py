"""What every API dialect does alike through its spec (:mod:`latdoc.probe.dialects`),
and :func:`Dialect`, a dialect named by a library user.

:func:`request_body` builds a streamed request's body, :func:`parse_event` reads one
of its events into an :class:`EventInfo` (its answer and reasoning characters, its
usage, finish reason or error); an event of another dialect says which one the
endpoint speaks, so a wrong ``--api`` is named rather than timed, as
:func:`dialect_hint` names it for a refused request.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.probe import dialects
from latdoc.probe._events import EventInfo, Usage
from latdoc.probe._tools import Tool
from latdoc.probe.dialects import DialectSpec

__all__ = [
    "Dialect",
    "EventInfo",
    "Prompt",
    "Usage",
    "check_extra_body",
    "dialect_hint",
    "error_in_body",
    "error_message",
    "merge_fields",
    "parse_event",
    "parse_extra_body",
    "request_body",
]


Dialect = dialects.resolve
"""What a library user names a dialect by: ``Dialect("anthropic")`` is the
:class:`~latdoc.probe.dialects.DialectSpec` called ``anthropic`` (a spec is itself), as
:attr:`Endpoint.dialect <latdoc.probe.Endpoint.dialect>` holds it; a trace stores its name."""


def check_extra_body(extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` as fields to add to every request body; raises :class:`UsageError` for
    one that latdoc writes itself in some dialect (the model, the prompt, streaming, the
    output length), a field inside an object named by its dotted path
    (``generationConfig.maxOutputTokens``)."""
    problem = _extra_body_problem(extra)
    if problem is not None:
        raise UsageError(Message("--extra-body {problem}", problem=problem))
    return dict(extra)


def _extra_body_problem(extra: Mapping[str, Any]) -> Message | None:
    """What is wrong with ``extra`` as ``--extra-body``, said after the flag's name (the
    command line's own error names it already), or ``None``."""
    if not isinstance(extra, Mapping):
        return Message("must be a JSON object, got {kind}", kind=type(extra).__name__)
    reserved = dialects.reserved_body_fields()
    taken = [f"{k} ({why})" for k, why in sorted(reserved.items()) if _has_field(extra, k)]
    if taken:
        return Message("may not set {fields}", fields=", ".join(taken))
    return None


def parse_extra_body(text: str) -> dict[str, Any]:
    """``--extra-body``'s text, a JSON object of request fields latdoc does not write
    itself, read and checked (:func:`check_extra_body`); what is not such an object,
    nested too deeply, not finite or not Unicode is a :class:`UsageError` in one line."""
    try:
        value = json.loads(text, parse_float=_finite, parse_constant=_not_json)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise UsageError(N_("not valid JSON (nested too deeply)")) from None
    except UnicodeEncodeError:
        raise UsageError(
            Message("holds text that is not Unicode: {text!r}", text=_clip(text))
        ) from None
    except ValueError as exc:
        raise UsageError(
            Message("not valid JSON ({exc}): {text!r}", exc=str(exc), text=_clip(text))
        ) from None
    if not isinstance(value, dict):
        raise UsageError(
            Message(
                "expected a JSON object such as '{{\"ignore_eos\": true}}', got {text!r}", text=text
            )
        )
    problem = _extra_body_problem(value)
    if problem is not None:
        raise UsageError(problem)
    return value


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{_clip(text)} is not a finite number")
    return value


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _clip(text: str, most: int = 80) -> str:
    return text if len(text) <= most else f"{text[:most]}…"


def _has_field(body: Mapping[str, Any], dotted: str) -> bool:
    head, _, rest = dotted.partition(".")
    if head not in body:
        return False
    inner = body[head]
    return not rest or (isinstance(inner, Mapping) and _has_field(inner, rest))


def merge_fields(body: Mapping[str, Any], more: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with ``more``'s fields added: an object given for an object is merged into
    it (so ``{"generationConfig": {"temperature": 0}}`` keeps the output limit), any other
    value replaces the body's."""
    out = dict(body)
    for name, value in more.items():
        inner = out.get(name)
        if isinstance(inner, Mapping) and isinstance(value, Mapping):
            out[name] = merge_fields(inner, value)
        else:
            out[name] = value
    return out


Prompt = str | Sequence[Mapping[str, str]]
"""The user's text, or a conversation as chat messages (``role`` and ``content``)."""


def request_body(
    dialect: str | DialectSpec,
    model: str,
    prompt: Prompt,
    max_tokens: int,
    *,
    include_usage: bool,
    extra: Mapping[str, Any] | None = None,
    tools: Sequence[Tool] = (),
) -> dict[str, Any]:
    """The JSON body of a streamed request offering ``tools`` in the dialect's shape;
    ``extra`` fields (checked by :func:`check_extra_body`) are added to it last, such as
    ``ignore_eos``, ``temperature`` or a reasoning effort. Each dialect places the
    messages its own way (Anthropic's system messages as ``system``, the Responses API's
    as ``input``)."""
    messages = (
        [{"role": "user", "content": prompt}]
        if isinstance(prompt, str)
        else [dict(m) for m in prompt]
    )
    spec = dialects.resolve(dialect)
    body = spec.body(model, messages, max_tokens, include_usage)
    if tools:
        body = merge_fields(body, spec.tool_fields(tools))
    return merge_fields(body, check_extra_body(extra)) if extra else body


def parse_event(
    obj: Any, dialect: str | DialectSpec = dialects.DEFAULT, event: str | None = None
) -> EventInfo:
    """Interpret one JSON event of ``dialect``; ``event`` is its SSE ``event:`` name."""
    spec = dialects.resolve(dialect)
    return spec.parse(obj, event, lambda o, e: dialects.other_dialect(o, e, spec))


def dialect_hint(
    url: str, dialect: str | DialectSpec, status: int | None, message: str = ""
) -> str | None:
    """A hint naming the likely dialect when a request to ``url`` in ``dialect`` was
    refused as a request of the wrong API would be: 400 to 405 from a host known for
    another dialect, or a 404 (not about the model) or 405 from any host."""
    spec = dialects.resolve(dialect)
    host = (urlsplit(url).hostname or "").lower()
    likely = next(
        (d for d in dialects.DIALECTS for suffix in d.hosts if host.endswith(suffix)), None
    )
    if likely is not None and likely is not spec and status in (400, 401, 403, 404, 405):
        return f"{host} speaks the {likely.name} dialect: try --api {likely.name}"
    if status == 405 or (status == 404 and "model" not in message.lower()):
        others = ", ".join(d.name for d in dialects.DIALECTS if d is not spec)
        return f"no {spec.route.path} here: is the base URL right, or is the dialect {others}?"
    return None


def error_in_body(body: bytes, dialect: str | DialectSpec) -> EventInfo | None:
    """The error a whole JSON body answered with HTTP 200 carries, read as the dialect
    reads an error event (MiniMax's ``base_resp``, an ``error`` object): with the status
    it stands for where it names one. ``None`` for a body that is no JSON object, or
    one that carries no error."""
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    info = parse_event(obj, dialect)
    return info if info.error is not None else None


def error_message(body: bytes, content_type: str | None) -> str:
    """A one-line description of an error response body (JSON or HTML or text)."""
    text = body.decode("utf-8", errors="replace").strip()
    if (content_type and "json" in content_type) or text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError:
            pass
        else:
            if isinstance(obj, list) and len(obj) == 1:
                obj = obj[0]  # Google's streamed error: an array of one error object
            if isinstance(obj, dict):
                err = obj.get("error", obj)
                if isinstance(err, dict):
                    msg = err.get("message") or err.get("detail") or err.get("type")
                    if msg and obj.get("type") == "error" and err.get("type") not in (None, msg):
                        msg = f"{err['type']}: {msg}"  # Anthropic's error body names its type
                    status = err.get("status")
                    if msg and isinstance(status, str) and status != msg:
                        msg = f"{status}: {msg}"  # Google's names its canonical status
                    if msg:
                        return _one_line(str(msg))
                elif isinstance(err, str):
                    return _one_line(err)
    if "<" in text and ">" in text:
        match = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        if match and match.group(1).strip():
            return _one_line(match.group(1))
        text = re.sub(r"<[^>]+>", " ", text)
    return _one_line(text) or "empty body"


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
