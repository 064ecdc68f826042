"""What an application's request says about itself, read from the httpcore request the
pool is handed: its URL (credentials redacted) and the dialect its path speaks, the
model named in its JSON body, the size of the prompt in it, its key, body size and
``X-Request-ID``, and the timeouts httpx set on it; and the same request asking its
stream for usage, where its dialect has a field for that.
"""

from __future__ import annotations

import json
from typing import Any

from latdoc.probe import Timeouts, TraceTarget, dialects
from latdoc.probe.dialects import DialectSpec
from latdoc.records import estimate_tokens
from latdoc.store import redact_url

__all__ = [
    "body_size",
    "dialect_of",
    "json_body",
    "prompt_size",
    "request_id",
    "request_timeouts",
    "trace_target",
    "url_text",
    "with_usage_asked",
]


def request_timeouts(request: Any) -> Timeouts:
    raw = request.extensions.get("timeout") or {}
    default = Timeouts()

    def pick(name: str, fallback: float) -> float:
        value = raw.get(name)
        return float(value) if isinstance(value, int | float) else fallback

    return Timeouts(
        connect=pick("connect", default.connect),
        read=pick("read", default.read),
        write=pick("write", default.write),
        pool=pick("pool", default.pool),
        total=default.total,
    )


def trace_target(request: Any, body: Any) -> TraceTarget:
    """Where the request went, its model (from ``body``, its parsed JSON body:
    :func:`json_body`), dialect and key."""
    url = request.url
    scheme = url.scheme.decode("ascii") if isinstance(url.scheme, bytes) else str(url.scheme)
    text = url_text(url)
    return TraceTarget(
        url=redact_url(text),
        model=_model_of(body),
        dialect=dialect_of(text),
        is_tls=scheme == "https",
        secret=_bearer(request),
    )


def url_text(url: Any) -> str:
    def text(part: Any) -> str:
        return part.decode("ascii") if isinstance(part, bytes) else str(part)

    port = f":{url.port}" if url.port is not None else ""
    return f"{text(url.scheme)}://{text(url.host)}{port}{text(url.target)}"


def _header(request: Any, name: bytes) -> bytes | None:
    for key, value in request.headers:
        if key.lower() == name:
            return value  # type: ignore[no-any-return]
    return None


def request_id(request: Any) -> str | None:
    """The ``X-Request-ID`` the application sent, if it sent one."""
    value = _header(request, b"x-request-id")
    return None if value is None else value.decode("latin-1")


def dialect_of(url: str) -> str:
    """The dialect a request's path speaks (``http`` and the last path part for others)."""
    path = url.split("?", 1)[0]
    spec = dialects.of_path(path)
    if spec is not None:
        return spec.name
    return path.rsplit("/", 1)[-1] or "http"


def _bearer(request: Any) -> str | None:
    """The request's key, from the first header a dialect carries one in."""
    for name in dialects.key_headers():
        value = _header(request, name)
        if value is None:
            continue
        text = value.decode("latin-1")
        if name == b"authorization":
            scheme, _, token = text.partition(" ")
            return token or scheme or None
        return text or None
    return None


def body_size(request: Any) -> int | None:
    value = _header(request, b"content-length")
    return int(value) if value is not None and value.isdigit() else None


def _model_of(body: Any) -> str:
    """The ``model`` of a parsed JSON request body."""
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else ""


def prompt_size(request: Any, body: Any) -> tuple[int | None, int | None]:
    """Characters of the prompt's text in a request's parsed JSON body (:func:`json_body`),
    as its dialect places the prompt, and the tokens they are estimated to hold;
    ``(None, None)`` when the body was not read or holds no prompt."""
    spec = _spec_of(request)
    chars = None if spec is None else spec.prompt_chars(body)
    return chars, None if chars is None else estimate_tokens(chars)


def with_usage_asked(request: Any) -> Any | None:
    """A copy of a streamed request whose body asks the stream to report its usage
    (chat completions' ``stream_options.include_usage``), its ``Content-Length`` set
    anew; ``None`` when its dialect reports usage unasked or has no such field, when it
    does not stream, names the option already, or its body is not JSON held in bytes."""
    spec = _spec_of(request)
    asked = None if spec is None else spec.with_usage_asked(json_body(request))
    if asked is None:
        return None
    content = json.dumps(asked, separators=(",", ":"), ensure_ascii=False).encode()
    headers = [(k, v) for k, v in request.headers if k.lower() != b"content-length"]
    headers.append((b"Content-Length", str(len(content)).encode("ascii")))
    return type(request)(
        method=request.method,
        url=request.url,
        headers=headers,
        content=content,
        extensions=dict(request.extensions),
    )


def _spec_of(request: Any) -> DialectSpec | None:
    return dialects.of_path(url_text(request.url).split("?", 1)[0])


def json_body(request: Any) -> Any:
    """The request's JSON body, parsed once for every fact read from it; ``None`` when
    its bytes are not held or are not JSON."""
    body = _request_body(request)
    if body is None:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _request_body(request: Any) -> bytes | None:
    stream = request.stream
    if isinstance(stream, bytes):
        return stream
    # httpx hands httpcore its request body as a byte stream over the bytes it holds.
    for attr in ("_stream", "_content"):
        held = getattr(stream, attr, None)
        if isinstance(held, bytes):
            return held
    return None
