"""What the lab knows of one API it stands in for, as data: :class:`StandIn`.

A stand-in holds everything the simulated endpoint does differently per API: its
route, where a request keeps its prompt, how it asks for reasoning, whether it
always reports usage or needs an output limit, which headers carry its key, how
its errors are worded, and the events and document of its answer. The lab's
shared code reads these fields; it never asks which API it serves. What several
stand-ins share sits beside it: OpenAI's key check and error body, and the reasoning
a requested effort asks for (:func:`effort_tokens`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from latdoc.lab.sim._call import UNAUTHORIZED, ApiError, Call
from latdoc.lab.sim._writers import StreamWriter

__all__ = [
    "Authorized",
    "Headers",
    "Query",
    "StandIn",
    "bearer_key",
    "effort_tokens",
    "openai_error",
]

Headers = Callable[[bytes], "bytes | None"]
"""A request header's value by its lower-case name, ``None`` when absent."""

Authorized = Callable[["bytes | None"], bool]
"""Whether an ``Authorization`` header's value carries the lab's key."""

Query = Mapping[str, list[str]]
"""A request's query parameters, each name with its values."""


def bearer_key(header: Headers, authorized: Authorized) -> None:
    """The key as OpenAI takes it, ``Authorization: Bearer KEY``; raises :class:`ApiError`."""
    if not authorized(header(b"authorization")):
        raise UNAUTHORIZED


def openai_error(error: ApiError) -> bytes:
    """The error as OpenAI words it: ``{"error": {"message": …, "type": …}}``."""
    return error.body


_EFFORT_SCALE = {"none": 0.0, "minimal": 0.0, "low": 0.25, "medium": 1.0, "high": 2.0}


def effort_tokens(effort: object, medium: int) -> int:
    """Reasoning tokens at a requested ``effort`` for a model that thinks ``medium`` at
    medium effort (``None``: not asked, so medium); :class:`ApiError` for another effort."""
    if effort is None:
        return medium
    if not isinstance(effort, str) or effort not in _EFFORT_SCALE:
        names = ", ".join(_EFFORT_SCALE)
        raise ApiError(400, f"Invalid reasoning effort {effort!r}: expected one of {names}.")
    return round(medium * _EFFORT_SCALE[effort])


@dataclass(frozen=True, eq=False)
class StandIn:
    """One API the lab serves: everything that differs between APIs, in one place."""

    name: str
    """The API dialect it stands in for (``chat``, ``anthropic`` …)."""
    path: str
    """Its route (``/v1/chat/completions``); ``{model}`` stands where a route names the
    model (``/v1/models/{model}:streamGenerateContent``), which then is the request's."""
    messages: Callable[[dict[str, object]], object] | None
    """The request's prompt as chat messages (before validation); ``None`` when it is a
    completion's ``prompt`` (text, texts or token ids)."""
    writer: Callable[[Call, int, bool, int], StreamWriter]
    """The events of a streamed answer, from the call, its number (which makes its
    id), whether to stamp each event, and the prompt tokens the cache served."""
    document: Callable[[Call, int, dict[str, Any], int], dict[str, object]]
    """A whole (not streamed) answer, from the call, its number, the OpenAI-style usage
    and the prompt tokens the cache served."""
    reasoning: Callable[[dict[str, object], int], int] | None = None
    """The reasoning tokens a request asks of a model that thinks the given number at
    medium effort; ``None`` when the API has no reasoning."""
    prompt_param: str = "prompt"
    """What the context-length error calls the prompt."""
    streams: bool = False
    """The route always streams (``:streamGenerateContent``); else the body's ``stream``
    asks for it."""
    usage_always: bool = False
    """Usage comes with every stream, not only when ``stream_options`` asks for it."""
    requires_max_tokens: bool = False
    """A request without ``max_tokens`` is refused."""
    check_key: Callable[[Headers, Authorized], None] = bearer_key
    """Checks the request's key and required headers; raises :class:`ApiError`."""
    error_body: Callable[[ApiError], bytes] = openai_error
    error_headers: Callable[[ApiError], list[tuple[bytes, bytes]]] | None = None
    """Headers a refusal carries besides its body (AWS's ``x-amzn-ErrorType``)."""
    also_paths: tuple[str, ...] = ()
    """More routes it answers on, alike (Gemini's ``/v1beta/…`` beside ``/v1/…``)."""
    check_query: Callable[[str, Query], None] | None = None
    """Checks the query a request to a path must carry (Azure's ``api-version``);
    raises :class:`ApiError`."""
    output_limit: Callable[[dict[str, object]], tuple[str, object]] | None = None
    """The name and value of a request's output limit where it is not a top-level
    ``max_tokens`` (Gemini's ``generationConfig.maxOutputTokens``)."""
    json_array: Callable[[Query], bool] | None = None
    """Whether a request with this query streams as one JSON array rather than
    server-sent events (Google's ``streamGenerateContent`` without ``alt=sse``);
    ``None``: never."""
    media_type: bytes | None = None
    """The content type of its streams where they are neither server-sent events nor a
    JSON array (Bedrock's ``application/vnd.amazon.eventstream``)."""
    reasoning_shown: Callable[[dict[str, object]], bool] | None = None
    """Whether the answer streams its reasoning (Gemini's only when
    ``thinkingConfig.includeThoughts`` asks); ``None``: always. Reasoning not shown
    still takes its time, and the usage counts it."""
