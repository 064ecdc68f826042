"""The server's own account of a run, beside the client's, and where the two disagree
(summarised by :func:`latdoc.analysis.servertime.server_account`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Disagreement", "ServerAccount"]


@dataclass(frozen=True, slots=True)
class Disagreement:
    """Client and server tell different stories about the same requests."""

    what: str
    """In words, with the numbers of the worst request."""
    requests: int
    """How many requests disagree."""
    of: int
    """Out of how many that carry server timing."""
    worst_ms: float
    """The largest gap between the two accounts, ms."""


@dataclass(frozen=True, slots=True)
class ServerAccount:
    """A run's requests as the server accounts for them: medians in ms, and disagreements."""

    source: str
    numbers: Mapping[str, float | None]
    disagreements: tuple[Disagreement, ...] = ()
    metrics: Mapping[str, float | None] = field(default_factory=dict)
    """Engine metrics scraped before and after the run (their difference), when scraped."""
    metrics_source: str | None = None
    """Where the metrics came from (``llama.cpp /metrics at URL``), when scraped."""
