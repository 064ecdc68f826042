"""The client host as data: the facts read from it and the checklist items made of them.

Reading the host is ``latdoc system``'s (``latdoc.features.system``, with the readers a
run records its host with in ``latdoc.pipeline``); judging the facts
is the advice's (``latdoc.advice.system``). Both records live here so a diagnosis can
carry the items that matter for its verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from latdoc.model.kind import Kind


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What the client host allows a streaming client; ``None`` where it was not readable
    (another OS, a sandbox, or a run stored before latdoc recorded it)."""

    slow_start_after_idle: int | None = None
    """``net.ipv4.tcp_slow_start_after_idle``: 1 restarts slow start after an idle pause."""
    congestion_control: str | None = None
    """``net.ipv4.tcp_congestion_control``; ``bbr`` paces itself and skips that restart."""
    keepalive_time_s: int | None = None
    keepalive_intvl_s: int | None = None
    keepalive_probes: int | None = None
    port_range: tuple[int, int] | None = None
    """``net.ipv4.ip_local_port_range``: the first and last ephemeral port."""
    open_files_soft: int | None = None
    """``RLIMIT_NOFILE``: the limit in force; ``-1`` for unlimited."""
    open_files_hard: int | None = None
    """The most an unprivileged ``ulimit -n`` may raise the soft limit to."""
    cpu_count: int | None = None
    """Cores this process may run on (its affinity)."""
    h2_version: str | None = None
    """The ``h2`` package httpx needs for HTTP/2; ``None`` when not installed or unknown."""
    http2_available: bool | None = None
    """Whether ``h2`` imports here; ``None`` when unknown."""
    python_version: str | None = None
    openssl_version: str | None = None
    tls13: bool | None = None
    """Whether Python's ssl module can speak TLS 1.3."""


@dataclass(frozen=True, slots=True)
class SystemItem:
    """One line of the host checklist: what it is, what it should be, why, how to change it."""

    key: str
    name: str
    current: str | None
    """The value read, in words; ``None`` when it was not readable here."""
    recommended: str
    ok: bool | None
    """``True`` when the current value is as recommended, ``False`` when it should
    change, ``None`` when it could not be read or there is nothing to judge."""
    why: str
    command: str
    """The command (or the line of code) that changes it."""
    kinds: tuple[Kind, ...]
    """The kinds of slow this setting can cause or cure."""
    allows: str | None = None
    """What the current value allows for the expected concurrent streams."""
