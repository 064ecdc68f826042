"""The API dialects latdoc speaks, one module each, listed once in :data:`DIALECTS`.

- :mod:`.chat`: OpenAI chat completions, as OpenAI, vLLM, llama.cpp, SGLang, Ollama
  and most gateways serve it (the default);
- :mod:`.completions`: OpenAI's (legacy) completions;
- :mod:`.anthropic`: Anthropic's Messages API;
- :mod:`.responses`: OpenAI's Responses API;
- :mod:`.gemini`: Google's Gemini API (``streamGenerateContent``);
- :mod:`.vertex`: Gemini on Google Cloud's Vertex AI;
- :mod:`.azure`: OpenAI chat completions on Azure OpenAI;
- :mod:`.bedrock`: Amazon Bedrock's Converse API (``converse-stream``).

Each module defines one :class:`DialectSpec` (``SPEC``). A new dialect is a new
module and one more entry in :data:`DIALECTS`: everything that lists, chooses or
reads dialects (``--api``, the URL, the key, the body, the events and their framing,
the hint for a wrong ``--api``, OpenTelemetry) reads this tuple.
"""

from __future__ import annotations

import copyreg
from collections.abc import Callable
from typing import Any

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.probe.dialects import (
    anthropic,
    azure,
    bedrock,
    chat,
    completions,
    gemini,
    responses,
    vertex,
)
from latdoc.probe.dialects._spec import REASONING_EFFORTS, DialectSpec, Route, text_chars

__all__ = [
    "DEFAULT",
    "DIALECTS",
    "REASONING_EFFORTS",
    "DialectSpec",
    "Route",
    "find",
    "get",
    "key_headers",
    "names",
    "of_path",
    "other_dialect",
    "reserved_body_fields",
    "resolve",
    "text_chars",
]

DIALECTS: tuple[DialectSpec, ...] = (
    chat.SPEC,
    completions.SPEC,
    anthropic.SPEC,
    responses.SPEC,
    gemini.SPEC,
    vertex.SPEC,
    azure.SPEC,
    bedrock.SPEC,
)
"""Every dialect, in the order the help lists them."""

DEFAULT = chat.SPEC
"""The dialect spoken when none is named."""


def names() -> tuple[str, ...]:
    """The ``--api`` values."""
    return tuple(spec.name for spec in DIALECTS)


def find(name: str) -> DialectSpec | None:
    """The dialect called ``name``, or ``None``."""
    return next((spec for spec in DIALECTS if spec.name == name), None)


def get(name: str) -> DialectSpec:
    """The dialect called ``name``; :class:`UsageError` naming the known ones."""
    spec = find(name)
    if spec is None:
        raise UsageError(
            Message("unknown API dialect {name!r}: {known}", name=name, known=", ".join(names()))
        )
    return spec


def resolve(dialect: str | DialectSpec) -> DialectSpec:
    """``dialect`` as a spec: the dialect called so (:func:`get`), or the spec itself, for
    where a library user may name one either way."""
    return dialect if isinstance(dialect, DialectSpec) else get(dialect)


def of_path(path: str) -> DialectSpec | None:
    """The dialect whose route a request's URL path ends in (the longest route, so
    ``/chat/completions`` is chat's, not completions'), or ``None``."""
    matching = [(r.length, spec) for spec in DIALECTS for r in spec.routes if r.matches(path)]
    return max(matching, key=lambda match: match[0], default=(0, None))[1]


def other_dialect(obj: dict[str, Any], event: str | None, own: DialectSpec) -> str | None:
    """The dialect other than ``own`` that claims a JSON event (with its SSE ``event:``
    name), or ``None``."""
    for spec in DIALECTS:
        if spec is not own and spec.claims is not None and spec.claims(obj, event):
            return spec.name
    return None


def reserved_body_fields() -> dict[str, str]:
    """Every body field some dialect writes itself, with why ``--extra-body`` may not
    set it."""
    fields: dict[str, str] = {}
    for spec in DIALECTS:
        for name, why in spec.body_fields.items():
            fields.setdefault(name, why)
    return fields


def _by_name(spec: DialectSpec) -> tuple[Callable[[str], DialectSpec], tuple[str]]:
    """A spec is pickled by its name, as a trace stores it: a process it is sent to (load's
    worker processes, Ray actors) finds the same dialect in its own registry, where the
    spec's functions (lambdas among them) could not travel. The registry says so, not
    the spec's class, which stands below every dialect and so below the registry."""
    return (get, (spec.name,))


copyreg.pickle(DialectSpec, _by_name)


_PROBE_KEY = "latdoc-key-probe"


def key_headers() -> tuple[bytes, ...]:
    """The headers some dialect carries its key in (``authorization``, ``x-api-key``,
    ``x-goog-api-key``, ``api-key`` …), lower-case, so a request's key is found and kept
    out of what is stored whatever API it spoke."""
    found: dict[bytes, None] = {}
    for spec in DIALECTS:
        for name, value in spec.auth_headers(_PROBE_KEY):
            if _PROBE_KEY.encode() in value:
                found.setdefault(name.lower())
    return tuple(found)
