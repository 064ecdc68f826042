"""The kinds of slow by name. How each is found, what it means and how it is shown is its
spec in :mod:`latdoc.analysis.kinds`, looked up by the kind."""

from __future__ import annotations

import enum

__all__ = ["RUN_KINDS", "Kind"]


class Kind(enum.StrEnum):
    """The closed set of answers to "which kind of slow is this?", by the strings stored
    runs and documents hold. What each means is its spec's (``KindSpec.meaning``)."""

    NETWORK_SETUP = "network_setup"
    NETWORK_PATH = "network_path"
    INPUT_LENGTH = "input_length"
    QUEUEING = "queueing"
    DECODE = "decode"
    REASONING = "reasoning"
    STALLS = "stalls"
    BUFFERING = "buffering"
    CLIENT = "client"
    ERRORS = "errors"
    AGENT = "agent"
    HEALTHY = "healthy"


RUN_KINDS: frozenset[Kind] = frozenset({Kind.AGENT})
"""The kinds named of an agent's run as a whole, from its span tree, never of requests
by a rule: no diagnosis of requests names them, and the truth bank, which draws
endpoints, has none."""
