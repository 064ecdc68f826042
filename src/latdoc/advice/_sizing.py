"""The numbers a remedy computes for this machine and the user's settings: the seed's
connection pool size (:func:`latdoc.model.pool_size`), the congestion controls that skip
TCP's restart after idle, and the sliding window a long prompt is trimmed to.
"""

from __future__ import annotations

from latdoc.model import pool_size

__all__ = [
    "SELF_PACED",
    "SUMMARY_AFTER_TURNS",
    "TRIM_WINDOW_TOKENS",
    "advised_pool",
    "trim_window",
]

TRIM_WINDOW_TOKENS = 2000
"""The sliding window the seed suggests: keep the last 2K tokens of history."""
SUMMARY_AFTER_TURNS = 10
"""The seed summarises history beyond 10 turns; the conversation experiment's history
reaches the long prompt measured here at that turn."""

SELF_PACED = frozenset({"bbr"})
"""Congestion controls that set their own rate: the kernel skips the restart after idle."""


def advised_pool(cpu_count: int, concurrency: int) -> int:
    """The pool the advice gives (:func:`latdoc.model.pool_size`), for at least one core and
    one request at once: a host that could not be read counts as one core."""
    return pool_size(max(1, cpu_count), max(1, concurrency))


def trim_window(long_tokens: int) -> int:
    """The window a prompt of ``long_tokens`` is trimmed to: the seed's 2K
    (:data:`TRIM_WINDOW_TOKENS`) where the run measured prompts of 4K tokens or more; below
    that, half the longest prompt (256 at least), since a 2K window would leave a
    2K-token prompt as it is and the fitted gain, and its experiment, would read zero."""
    return min(TRIM_WINDOW_TOKENS, max(256, long_tokens // 2))
