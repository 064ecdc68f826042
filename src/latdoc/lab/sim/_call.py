"""A request as the simulated endpoint serves it (:class:`Call`), and the refusal of
one (:class:`ApiError`).

:mod:`._request` makes a call from a request's body by what the route's stand-in
says; the stand-ins (:mod:`latdoc.lab.sim.dialects`) and the events and writers they
build on read calls and raise refusals. Both types live here, below either side.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal

__all__ = ["UNAUTHORIZED", "ApiError", "Call", "FinishReason"]

FinishReason = Literal["stop", "length"]


class ApiError(Exception):
    """A request the endpoint refuses, with its OpenAI-style error body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type_: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = json.dumps(
            {"error": {"message": message, "type": type_, "param": param, "code": code}}
        ).encode()


UNAUTHORIZED = ApiError(
    401, "Incorrect API key provided.", code="invalid_api_key", type_="invalid_request_error"
)


@dataclass(frozen=True, slots=True)
class Call:
    """A validated completion request, reduced to what drives the simulation.

    ``max_tokens`` is the output limit the request gets (what it asked for, or the
    default); ``output_tokens`` what is generated within it, ending with
    ``finish_reason``. ``prompt`` is the prompt's token sequence, kept only when the
    prefix cache needs it.
    """

    model: str
    prompt_tokens: int
    max_tokens: int
    output_tokens: int
    finish_reason: FinishReason
    stream: bool
    include_usage: bool
    prompt: tuple[Hashable, ...] | None = None
    reasoning_tokens: int = 0
    """Tokens thought before the answer (not counted against ``max_tokens``)."""
    tool_name: str | None = None
    """The tool the answer calls (the request's first), or ``None`` for a text answer."""
    json_array: bool = False
    """The answer streams as one JSON array, not server-sent events."""
    reasoning_shown: bool = True
    """The reasoning streams; else it only takes its time and counts in the usage."""
    answer: tuple[str, ...] | None = None
    """The answer's own tokens (each with the whitespace before it) where the prompt asks
    for a text back (:data:`~latdoc.lab.sim.REPEAT`); ``None``: the word cycle."""
    reasoning_in_text: bool = False
    """Chat and completions stream the reasoning as answer text between ``<think>`` and
    ``</think>``, not as ``reasoning_content`` (``LabConfig.reasoning_in_text``)."""

    @property
    def total_tokens(self) -> int:
        """Every output token: the reasoning, then the answer."""
        return self.reasoning_tokens + self.output_tokens
