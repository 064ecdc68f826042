"""What a provider's OpenAI-compatible chat API does its own way, as data: where its
usage puts the cached and the reasoning tokens and where a stream carries that usage
(:class:`UsageFields`), and the switch a request turns its thinking off with
(:class:`ThinkingSwitch`). A preset holds one :class:`Quirks`
(:attr:`latdoc.probe.providers.ProviderSpec.quirks`).

A field is named by its dotted path (``prompt_tokens_details.cached_tokens``; a list's
item by its index, ``choices.0.usage``), so the chat dialect reads every provider's
fields by one rule (:func:`count_at`), whichever provider a stream comes from.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from latdoc.errors import UsageError
from latdoc.i18n import Message

__all__ = [
    "OPENAI_CACHED",
    "OPENAI_REASONING",
    "OPENAI_USAGE",
    "Quirks",
    "ThinkingSwitch",
    "UsageFields",
    "at_path",
    "count_at",
]

OPENAI_CACHED = "prompt_tokens_details.cached_tokens"
"""Where OpenAI's usage counts the prompt tokens its cache served."""
OPENAI_REASONING = "completion_tokens_details.reasoning_tokens"
"""Where OpenAI's usage counts the output tokens spent reasoning."""
OPENAI_USAGE = "usage"
"""Where OpenAI's stream carries its usage: a chunk's own ``usage``."""


def at_path(obj: Any, path: str) -> Any:
    """The value at ``path`` (dotted keys, an index for a list's item) in ``obj``, or
    ``None`` where a step is missing."""
    for step in _steps(path):
        if isinstance(obj, Mapping):
            obj = obj.get(step)
        elif isinstance(obj, list) and step.isdigit() and int(step) < len(obj):
            obj = obj[int(step)]
        else:
            return None
    return obj


@functools.cache
def _steps(path: str) -> tuple[str, ...]:
    """A path's steps, split once: the chat dialect looks in a few places at every event
    that is not plain text."""
    return tuple(path.split("."))


def count_at(usage: Mapping[str, Any], paths: tuple[str, ...]) -> int | None:
    """The first count found at one of ``paths`` in ``usage``, or ``None``."""
    for path in paths:
        value = at_path(usage, path)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


@dataclass(frozen=True)
class UsageFields:
    """Where a provider's chat stream reports what its usage counts beyond prompt and
    completion tokens."""

    cached: tuple[str, ...] = (OPENAI_CACHED,)
    """The usage fields that count prompt tokens served from its cache."""
    reasoning: tuple[str, ...] = (OPENAI_REASONING,)
    """The usage fields that count output tokens spent reasoning."""
    at: str = OPENAI_USAGE
    """Where in a chunk the usage is: ``usage``; Moonshot's ``choices.0.usage`` of the
    last chunk; Groq's ``x_groq.usage``."""

    def words(self) -> tuple[str, ...]:
        """What differs from OpenAI's, in words, one line each."""
        said = []
        if self.at != OPENAI_USAGE:
            said.append(f"usage in {_shown(self.at)} of the last chunk")
        if self.cached != (OPENAI_CACHED,):
            said.append(f"cached prompt tokens in {_either(self.cached)}")
        if self.reasoning != (OPENAI_REASONING,):
            said.append(f"reasoning tokens in {_either(self.reasoning)}")
        return tuple(said)


def _shown(path: str) -> str:
    """``choices.0.usage`` as its reader writes it: ``choices[0].usage``."""
    return re.sub(r"\.(\d+)", r"[\1]", path)


def _either(paths: tuple[str, ...]) -> str:
    return " or ".join(f"usage.{_shown(p)}" for p in paths)


@dataclass(frozen=True)
class ThinkingSwitch:
    """A request field that turns a hybrid model's thinking on or off, where the
    provider takes no reasoning effort: DashScope's and SiliconFlow's
    ``enable_thinking``, Zhipu's and Ark's ``thinking.type``."""

    path: str
    """The field, dotted where it is inside an object (``thinking.type``)."""
    on: bool | str
    """Its value that turns thinking on."""
    off: bool | str
    """Its value that turns thinking off."""
    effort: ClassVar[str] = "none"
    """The one ``--reasoning-effort`` a switch takes: thinking off. The advice names it
    in the verify command it proposes for a preset with a switch."""

    def fields(self, effort: str, provider: str) -> dict[str, Any]:
        """The request fields that ask for ``effort``: thinking off for :attr:`effort`;
        any other effort is a :class:`UsageError`, for the switch has no lower setting
        than on."""
        if effort != self.effort:
            raise UsageError(
                Message(
                    "--provider {provider} turns thinking on or off ({words}), it takes no "
                    "reasoning effort {effort}: --reasoning-effort {off} turns it off",
                    provider=provider,
                    words=self.words(),
                    effort=effort,
                    off=self.effort,
                )
            )
        value: Any = self.off
        for step in reversed(self.path.split(".")):
            value = {step: value}
        return dict(value)

    def words(self) -> str:
        """The switch in words: ``thinking.type enabled|disabled``."""
        return f"{self.path} {_json(self.on)}|{_json(self.off)}"


def _json(value: bool | str) -> str:
    return str(value).lower() if isinstance(value, bool) else value


@dataclass(frozen=True)
class Quirks:
    """What one provider's chat API does its own way; the defaults are OpenAI's."""

    usage: UsageFields = field(default_factory=UsageFields)
    """Where its stream reports cached and reasoning tokens."""
    thinking: ThinkingSwitch | None = None
    """The switch ``verify --remedy reasoning-effort`` turns thinking off with, in place
    of the dialect's reasoning effort; ``None``: the dialect's effort."""
    notes: tuple[str, ...] = ()
    """What else a user of it meets, in words (its keys' form, a header it adds)."""

    def words(self) -> tuple[str, ...]:
        """Every quirk in words, one line each; none for a provider that is OpenAI's
        likeness."""
        switch = () if self.thinking is None else (f"thinking on|off by {self.thinking.words()}",)
        return (*self.usage.words(), *switch, *self.notes)
