"""What latdoc knows of one API dialect, as data: :class:`DialectSpec` and its :class:`Route`.

A spec holds everything that differs between APIs: where a request goes (from the
base URL and the model), which key and headers it carries, the body it sends, how
each streamed event reads, what ends a stream, how a reasoning effort is asked
for, which hosts speak it and how OpenTelemetry names its operation. Code that
serves every dialect reads these fields; it never asks which dialect it has.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.probe._events import EventInfo
from latdoc.probe._framing import SSE, Framing
from latdoc.probe._tools import CalledTool, Tool

__all__ = [
    "BY_MAX_TOKENS",
    "BY_MODEL",
    "BY_PROMPT",
    "REASONING_EFFORTS",
    "STREAMING",
    "USAGE_ASKED",
    "CalledTool",
    "Claim",
    "DialectSpec",
    "Foreign",
    "Messages",
    "Parser",
    "Route",
    "Signer",
    "Tool",
    "ToolTurn",
    "bearer_auth",
    "event_type",
    "text_chars",
]

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")
"""The reasoning efforts a request may ask for, least first."""

BY_MODEL = "--model sets it"
BY_PROMPT = "the prompt options set it"
BY_MAX_TOKENS = "--max-tokens sets it"
STREAMING = "latdoc always streams"
USAGE_ASKED = "latdoc asks for usage itself"
"""Why a body field may not be given again with ``--extra-body``, for
:attr:`DialectSpec.body_fields`."""

Messages = list[dict[str, str]]
"""The prompt as chat messages (``role`` and ``content``), as every body builder takes it."""

Foreign = Callable[[dict[str, Any], str | None], str | None]
"""The name of the other dialect a JSON event belongs to (from its type or SSE ``event:``
name and shape), or ``None`` when it is nobody else's."""

Parser = Callable[[Any, str | None, Foreign], EventInfo]
"""Reads one JSON event (with its SSE ``event:`` name); an event that is not its own
dialect's may be named with the :data:`Foreign` it is handed."""

Claim = Callable[[dict[str, Any], str | None], bool]
"""Whether a JSON event (with its SSE ``event:`` name) is one only this dialect sends."""


ToolTurn = Callable[[str, Sequence[CalledTool], Sequence[str]], list[dict[str, Any]]]
"""The messages that put a model's tool calls back in a conversation: from the text it
answered beside them, its calls, and each call's result, the model's turn and the turn
that hands the results back, in the API's own shape."""


class Signer(Protocol):
    """Signs each request of a session (AWS's SigV4): the headers to add to one request,
    from its method, URL, headers and body."""

    secrets: tuple[str, ...]
    """What the signer holds that is never to be written (an access key id, a session
    token)."""

    def __call__(
        self, method: str, url: str, headers: Sequence[tuple[bytes, bytes]], body: bytes
    ) -> list[tuple[bytes, bytes]]: ...


@dataclass(frozen=True)
class Route:
    """The path after the base URL; ``{model}`` stands where the model is named in it,
    URL-quoted (``/models/{model}:streamGenerateContent``). A query in the path
    (``?alt=sse``) is sent with every request; a query on the base URL is kept, its
    parameters taking the place of the route's of the same name
    (``https://r.example/?api-version=2025-04-01-preview``)."""

    path: str
    after: str | None = None
    """The end of the base URL's path this route is taken after (Azure's ``/openai/v1``),
    among a dialect's :attr:`DialectSpec.other_routes`; ``None``: after any."""

    def url(self, base_url: str, model: str) -> str:
        base = urlsplit(base_url)
        path, _, query = self.path.replace("{model}", quote(model, safe="")).partition("?")
        given = parse_qsl(base.query, keep_blank_values=True)
        named = {name for name, _ in given}
        params = [p for p in parse_qsl(query, keep_blank_values=True) if p[0] not in named]
        merged = urlencode(params + given, safe=":")
        return urlunsplit((base.scheme, base.netloc, base.path.rstrip("/") + path, merged, ""))

    def fits(self, base_url: str) -> bool:
        """Whether this route is taken after ``base_url``."""
        return self.after is None or urlsplit(base_url).path.rstrip("/").endswith(self.after)

    def matches(self, path: str) -> bool:
        """Whether a request's URL path (without its query) ends in this route, for any model."""
        return self._pattern.search(path) is not None

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        route = (self.after or "") + self.path.split("?", 1)[0]
        pattern = "[^/]+".join(re.escape(part) for part in route.split("{model}"))
        return re.compile(pattern + "$")

    @property
    def length(self) -> int:
        """How much of a request's path the route names, so the longest match wins."""
        return len((self.after or "") + self.path.split("?", 1)[0])


@dataclass(frozen=True, eq=False)
class DialectSpec:
    """One API dialect: everything that differs between APIs, in one place. It pickles as
    its name, looked up again in the registry (:mod:`latdoc.probe.dialects`)."""

    name: str
    """The ``--api`` value, and the dialect a trace stores (``chat``, ``anthropic`` …)."""
    title: str
    """What the API is, in the help: ``Anthropic's Messages API``."""
    route: Route
    """Where a request goes after the base URL (the route the help names)."""
    key_variable: str
    """The environment variable the API key is read from by default."""
    auth_headers: Callable[[str | None], list[tuple[bytes, bytes]]]
    """The headers that carry the key (``None``: no key), and any version header."""
    body: Callable[[str, Messages, int, bool], dict[str, Any]]
    """The JSON body of a streamed request from the model, the messages, the output
    limit, and whether to ask for usage on the stream."""
    body_fields: Mapping[str, str]
    """The body fields :attr:`body` writes, each with why ``--extra-body`` may not set it."""
    parse: Parser
    end_marker: str
    """What ends a complete stream, as a message names it: ``[DONE] or a finish_reason``."""
    claims: Claim | None = None
    """The events only this dialect sends, so a wrong ``--api`` is named; ``None`` when
    its events are another dialect's shape."""
    reasoning: Callable[[str], dict[str, Any]] | None = None
    """The request fields that ask for a reasoning effort (one of
    :data:`REASONING_EFFORTS`); ``None`` when the API has none."""
    hosts: tuple[str, ...] = ()
    """Host name suffixes that speak only this dialect (``anthropic.com``)."""
    otel_operation: str | None = "chat"
    """The GenAI semantic conventions' ``gen_ai.operation.name`` of its requests;
    ``None``: its requests get no span."""
    other_routes: tuple[Route, ...] = ()
    """Routes taken instead of :attr:`route` after a base URL they fit
    (:attr:`Route.after`), the first that fits."""
    also_key_variables: tuple[str, ...] = ()
    """More variables the key is read from, in turn, when :attr:`key_variable` is unset."""
    framings: tuple[Framing, ...] = (SSE,)
    """How its streams may be framed; the response's ``Content-Type`` picks one."""
    signer: Callable[[str | None, str], Signer | None] | None = None
    """For an API whose requests are signed (Bedrock's SigV4): from the key its variables
    give (``None``: none is set) and the request URL, the :class:`Signer` of a session's
    requests, or ``None`` when the key's headers suffice; called once a session, it raises
    :class:`~latdoc.errors.UsageError` when it finds no credential. ``None``: the key's
    headers are the whole credential."""
    prompt_fields: tuple[str, ...] = ()
    """The body fields that hold the prompt (``messages``; ``system`` and ``messages``):
    the text in them is what :meth:`prompt_chars` counts in a request someone else made."""
    tools: Callable[[Sequence[Tool]], dict[str, Any]] | None = None
    """The request fields that offer the model these tools (``--tools``), in the API's own
    shape; ``None`` when the API has no tool calls."""
    tool_turn: ToolTurn | None = None
    """How a conversation answers the model's tool calls (an agent trace's replay);
    ``None`` where latdoc does not write them."""
    usage_option: Mapping[str, Any] | None = None
    """The body fields that ask a stream to report its usage
    (``{"stream_options": {"include_usage": True}}``); ``None`` when its streams report
    usage unasked."""

    def __repr__(self) -> str:
        return f"DialectSpec({self.name!r})"

    @property
    def routes(self) -> tuple[Route, ...]:
        """Every route its requests may take."""
        return (self.route, *self.other_routes)

    @property
    def key_variables(self) -> tuple[str, ...]:
        """The variables the key is read from, the first set one winning."""
        return (self.key_variable, *self.also_key_variables)

    @property
    def accept(self) -> str:
        """The ``Accept`` header of its requests: every framing it reads."""
        return ", ".join(f.media_type for f in self.framings)

    def url(self, base_url: str, model: str) -> str:
        """Where a request for ``model`` goes, from the user's base URL."""
        route = next((r for r in self.other_routes if r.fits(base_url)), self.route)
        return route.url(base_url, model)

    def prompt_chars(self, body: Any) -> int | None:
        """Characters of prompt text in a request ``body`` of this dialect (the parsed
        JSON): every string under :attr:`prompt_fields` that is text (a message's
        ``content``, a part's ``text``, a prompt or instructions given as a string), not
        roles, types, ids or data; ``None`` when the body is not an object holding one
        of those fields."""
        if not isinstance(body, Mapping):
            return None
        held = [body[name] for name in self.prompt_fields if name in body]
        if not held:
            return None
        return sum(text_chars(value) for value in held)

    def with_usage_asked(self, body: Any) -> dict[str, Any] | None:
        """``body`` (the parsed JSON of a streamed request) asking its stream to report
        usage, or ``None`` when there is nothing to add: the dialect reports usage
        unasked, the request does not stream, or it names the option already."""
        option = self.usage_option
        if option is None or not isinstance(body, Mapping) or body.get("stream") is not True:
            return None
        if any(name in body for name in option):
            return None
        return {**body, **option}

    def reasoning_fields(self, effort: str) -> dict[str, Any]:
        """Request fields that ask for ``effort``; :class:`UsageError` for an unknown
        effort or a dialect without one."""
        if effort not in REASONING_EFFORTS:
            raise UsageError(
                Message(
                    "unknown reasoning effort {effort!r}: {known}",
                    effort=effort,
                    known=", ".join(REASONING_EFFORTS),
                )
            )
        if self.reasoning is None:
            raise UsageError(Message("the {name} dialect has no reasoning effort", name=self.name))
        return self.reasoning(effort)

    def tool_fields(self, tools: Sequence[Tool]) -> dict[str, Any]:
        """Request fields that offer ``tools``; :class:`UsageError` for a dialect without
        tool calls."""
        if self.tools is None:
            raise UsageError(Message("the {name} dialect has no tool calls", name=self.name))
        return self.tools(tools) if tools else {}


_TEXT_KEYS = frozenset({"content", "text", "parts", "input", "system", "prompt"})
"""Keys under a prompt field whose strings are text (a message's ``role`` and a part's
``type`` are not)."""


def text_chars(value: Any) -> int:
    """Characters of text in a prompt field's value: a string, a list of them or of
    messages and parts, a message or part object (its ``content``, ``text``, ``parts``,
    ``input``, ``system`` or ``prompt``)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(text_chars(item) for item in value)
    if isinstance(value, Mapping):
        return sum(text_chars(v) for k, v in value.items() if k in _TEXT_KEYS)
    return 0


def bearer_auth(api_key: str | None) -> list[tuple[bytes, bytes]]:
    """``Authorization: Bearer KEY``, as OpenAI and most gateways take the key."""
    return [(b"authorization", b"Bearer " + api_key.encode())] if api_key else []


def event_type(obj: dict[str, Any], event: str | None) -> str | None:
    """An event's ``type`` field, else its SSE ``event:`` name."""
    kind = obj.get("type")
    return kind if isinstance(kind, str) else event
