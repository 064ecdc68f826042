"""Which process runs a run, and whether it still does: :class:`Owner`.

Each run records the process that keeps it: its id, the host's name, the boot it
runs in (Linux's ``/proc/sys/kernel/random/boot_id``; ``None`` elsewhere) and when
the process started within that boot (Linux's ``/proc/<pid>/stat``, so a process id
taken again by another process is not mistaken for the first). A store that is
opened marks ``interrupted`` every ``running`` run whose owner :func:`is_gone`.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class Owner:
    """The process that keeps a run."""

    pid: int | None
    host: str | None
    boot_id: str | None
    started: int | None
    """Clock ticks from the boot to the process's start (Linux), else ``None``."""


def boot_id(path: Path = BOOT_ID) -> str | None:
    """This boot's id (Linux), ``None`` where the system does not say."""
    try:
        return path.read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def process_started(pid: int, proc: Path = Path("/proc")) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux); ``None`` when it
    is not running or the system does not say."""
    try:
        stat = (proc / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
        # The command name (field 2) is in parentheses and may hold spaces.
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def current() -> Owner:
    """This process."""
    pid = os.getpid()
    return Owner(pid, socket.gethostname(), boot_id(), process_started(pid))


def _alive(pid: int) -> bool | None:
    """Whether a process ``pid`` runs on this host; ``None`` where it cannot be told."""
    if os.name != "posix" or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return None
    return True


def is_gone(owner: Owner, here: Owner) -> bool:
    """Whether ``owner``'s process has ended, seen from ``here``. Runs of another host,
    or whose owner is unknown, are never gone: nothing here can tell."""
    if owner.host is None or owner.host != here.host or owner.pid is None:
        return False
    if owner.boot_id is not None and here.boot_id is not None and owner.boot_id != here.boot_id:
        return True
    if owner.pid == here.pid and owner.started == here.started:
        return False
    alive = _alive(owner.pid)
    if alive is None:
        return False
    if not alive:
        return True
    # The id is taken; by the same process only if it started when the owner did.
    if owner.started is not None and owner.boot_id is not None and owner.boot_id == here.boot_id:
        now = process_started(owner.pid)
        return now is not None and now != owner.started
    return False
