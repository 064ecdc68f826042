"""The experiments ``latdoc verify --remedy`` can run, one module each.

:data:`EXPERIMENTS` is the one list: the ``--remedy`` choices, their options on the
command line, and :func:`experiment`, which turns a ``--remedy`` name into the
:class:`Experiment` a :class:`~latdoc.features.verify.VerifyPlan` holds, read it. A
new experiment is a module defining one :class:`Experiment` and a line here.
"""

from __future__ import annotations

from typing import Any

from latdoc.errors import UsageError
from latdoc.features.verify.arms import Plan
from latdoc.features.verify.experiments._spec import (
    Argument,
    Before,
    Experiment,
    NoOptions,
    Outcome,
    Runner,
    options_from,
)
from latdoc.features.verify.experiments.conversation import CONVERSATION
from latdoc.features.verify.experiments.direct import DIRECT
from latdoc.features.verify.experiments.endpoint import ENDPOINT
from latdoc.features.verify.experiments.http2 import HTTP2
from latdoc.features.verify.experiments.keepalive import KEEPALIVE
from latdoc.features.verify.experiments.max_tokens import MAX_TOKENS
from latdoc.features.verify.experiments.model import MODEL
from latdoc.features.verify.experiments.pool import POOL
from latdoc.features.verify.experiments.prompt_cache import PROMPT_CACHE
from latdoc.features.verify.experiments.proxy import PROXY
from latdoc.features.verify.experiments.reasoning_effort import REASONING_EFFORT
from latdoc.features.verify.experiments.retry import RETRY
from latdoc.features.verify.experiments.trim import TRIM
from latdoc.i18n import Message

__all__ = [
    "EXPERIMENTS",
    "Argument",
    "Before",
    "Experiment",
    "NoOptions",
    "Outcome",
    "Plan",
    "Runner",
    "arguments",
    "experiment",
    "names",
    "options_from",
    "resolve",
]

EXPERIMENTS: tuple[Experiment[Any], ...] = (
    KEEPALIVE,
    HTTP2,
    POOL,
    TRIM,
    CONVERSATION,
    MAX_TOKENS,
    PROMPT_CACHE,
    RETRY,
    ENDPOINT,
    MODEL,
    REASONING_EFFORT,
    DIRECT,
    PROXY,
)


def names() -> tuple[str, ...]:
    """The ``--remedy`` values, in the registry's order."""
    return tuple(e.name for e in EXPERIMENTS)


def experiment(name: str) -> Experiment[Any]:
    """The experiment of ``--remedy name``."""
    for e in EXPERIMENTS:
        if e.name == name:
            return e
    raise UsageError(
        Message(
            "latdoc verify has no remedy {name!r}; one of {remedies}",
            name=name,
            remedies=", ".join(names()),
        )
    )


def resolve(remedy: str | Experiment[Any]) -> Experiment[Any]:
    """``remedy`` as an experiment: the one of that ``--remedy`` name (:func:`experiment`),
    or the experiment itself, for where a library user may name one either way."""
    return remedy if isinstance(remedy, Experiment) else experiment(remedy)


def arguments() -> tuple[Argument, ...]:
    """Every experiment's options, each once (experiments may share one), in order."""
    out: list[Argument] = []
    for e in EXPERIMENTS:
        out += [a for a in e.arguments if a not in out]
    return tuple(out)
