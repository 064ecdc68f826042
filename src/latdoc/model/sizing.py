"""The connection pool the method gives a client, and the concurrency assumed when the
user names none: one rule each, read by the diagnosis's advice, ``latdoc system``,
``latdoc verify --remedy pool`` and the production client alike."""

from __future__ import annotations

__all__ = ["DEFAULT_CONCURRENCY", "pool_size"]

DEFAULT_CONCURRENCY = 4
"""The concurrency a user expects in production when they do not say: a diagnosis's load
step sends it at once and the connection pool is sized for it."""


def pool_size(cpu_count: int, concurrency: int) -> int:
    """The seed's connection pool: ``2 × CPU cores + the concurrency expected`` (4 cores
    and 10 requests at once: 18)."""
    return 2 * cpu_count + concurrency
