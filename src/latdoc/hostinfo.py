"""Facts about the client host that the advice needs: cores and TCP settings.

Read at the edge (the CLI), passed to the pure analysis as data.
"""

from __future__ import annotations

import os
from pathlib import Path

TCP_SYSCTLS = (
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def tcp_settings(root: Path = Path("/proc/sys")) -> dict[str, int]:
    """The TCP sysctls that matter to LLM calls, where this platform exposes them."""
    values: dict[str, int] = {}
    for name in TCP_SYSCTLS:
        path = root.joinpath(*name.split("."))
        try:
            values[name] = int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return values
