"""The lab network's namespaces, state file and processes, made and removed by name.

:func:`create_namespaces` makes the client and server namespaces of lab network
``name`` (``<name>-client``, ``<name>-server``), a TUN device in each, point to
point, and their resolver files; :func:`remove` stops every process of the network
by PID (a PID is kept with its start time, which a reused PID lacks) and removes
the namespaces and files. What runs is recorded in ``/run/latdoc-net/<name>.json``
(:class:`NetState`), so a network can be changed or removed by a command other
than the one that started it, and leftovers of a crashed run are found
(:func:`clear_stale`). :class:`latdoc.lab.net.LabNet` is built on these.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from latdoc import errors
from latdoc.errors import LabError, UsageError
from latdoc.i18n import N_, Message
from latdoc.lab.net._dns import remove_resolver, write_resolver
from latdoc.lab.net._link import configure_tun, open_tun

__all__ = [
    "STATE_DIR",
    "NetState",
    "ProcessId",
    "alive",
    "check_name",
    "child_env",
    "clear_stale",
    "create_namespaces",
    "log_tail",
    "namespaces_of",
    "process_id",
    "remove",
    "require_root",
    "stop_children",
    "teardown",
]

STATE_DIR = "/run/latdoc-net"
ROOT_HINT = N_(
    "the impaired network needs root (network namespaces, TUN devices); run as root or skip"
)

_NAME = re.compile(r"[a-z][a-z0-9-]{0,11}")
_STOP_GRACE_S = 5.0
_POLL_S = 0.01
_IP_TIMEOUT_S = 10.0

ProcessId = tuple[int, int]
"""A PID and the process's start time (clock ticks since boot), which a reused PID lacks."""


def require_root() -> None:
    """Raise :class:`LabError` saying why the impaired network cannot run here."""
    if os.geteuid() != 0:
        raise LabError(
            Message("{hint} (running as uid {uid})", hint=Message.of(ROOT_HINT), uid=os.geteuid())
        )
    if shutil.which("ip") is None:
        raise LabError(
            Message("{hint} (the `ip` command of iproute2 is missing)", hint=Message.of(ROOT_HINT))
        )
    try:
        os.close(os.open("/dev/net/tun", os.O_RDWR))
    except OSError as exc:
        raise LabError(
            Message(
                "{hint} (cannot open /dev/net/tun: {strerror})",
                hint=Message.of(ROOT_HINT),
                strerror=exc.strerror,
            )
        ) from None


def teardown(name: str) -> bool:
    """Remove lab network ``name``: its processes, namespaces and files. Whether any existed."""
    check_name(name)
    require_root()
    return remove(name)


def check_name(name: str) -> str:
    """``name`` if it can name a lab network, else :class:`UsageError`."""
    if not _NAME.fullmatch(name):
        raise UsageError(
            Message(
                "invalid lab network name {name!r}: 1-12 of a-z, 0-9 and '-', starting "
                "with a letter",
                name=name,
            )
        )
    return name


def namespaces_of(name: str) -> tuple[str, str]:
    """The client and the server namespace of lab network ``name``."""
    return f"{name}-client", f"{name}-server"


def child_env() -> dict[str, str]:
    """This environment, with latdoc importable even when it is not installed."""
    env = dict(os.environ)
    # The folder that holds the latdoc package (errors.py sits at its top).
    source = os.path.dirname(os.path.dirname(os.path.abspath(errors.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
    return env


@dataclass
class NetState:
    """What runs for lab network ``name``, kept in ``STATE_DIR/<name>.json``."""

    name: str
    client_ns: str
    server_ns: str
    server_ip: str
    host_name: str
    settings: dict[str, Any]
    owner: ProcessId | None = None
    link: ProcessId | None = None
    servers: list[ProcessId] = field(default_factory=list)

    @property
    def control_path(self) -> str:
        return os.path.join(STATE_DIR, f"{self.name}.sock")

    def log_path(self, part: str) -> str:
        return os.path.join(STATE_DIR, f"{self.name}-{part}.log")

    def save(self) -> None:
        os.makedirs(STATE_DIR, mode=0o700, exist_ok=True)
        path = os.path.join(STATE_DIR, f"{self.name}.json")
        with open(path + ".tmp", "w") as out:
            json.dump(asdict(self), out)
        os.replace(path + ".tmp", path)

    @classmethod
    def load(cls, name: str) -> NetState | None:
        try:
            with open(os.path.join(STATE_DIR, f"{name}.json")) as state:
                fields = json.load(state)
            fields["owner"] = _pid_pair(fields["owner"])
            fields["link"] = _pid_pair(fields["link"])
            fields["servers"] = [_pid_pair(server) for server in fields["servers"]]
            return cls(**fields)
        except (OSError, ValueError, KeyError, TypeError):
            return None


def _pid_pair(value: Any) -> ProcessId | None:
    return None if value is None else (int(value[0]), int(value[1]))


def process_id(pid: int) -> ProcessId:
    """``pid`` with the start time of the process that has it now."""
    return pid, _start_time(pid) or 0


def _start_time(pid: int) -> int | None:
    """The start time of a running process; ``None`` for none or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def alive(process: ProcessId | None) -> bool:
    """Whether ``process`` still runs (not a zombie, and its PID not reused)."""
    return process is not None and _start_time(process[0]) == process[1]


def _terminate(processes: list[ProcessId]) -> None:
    """SIGTERM, then SIGKILL whatever still runs after the grace period; by PID only."""
    for sig, grace in ((signal.SIGTERM, _STOP_GRACE_S), (signal.SIGKILL, 1.0)):
        running = [p for p in processes if alive(p)]
        for pid, _ in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while running and time.monotonic() < deadline:
            time.sleep(_POLL_S)
            running = [p for p in running if alive(p)]
        if not running:
            return


def stop_children(children: list[subprocess.Popen[Any]]) -> None:
    """Terminate this process's ``children``, killing those still running after the grace."""
    for child in children:
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + _STOP_GRACE_S
    for child in children:
        try:
            child.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(1.0)


def _ip(*args: str, check: bool = True) -> str:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=_IP_TIMEOUT_S)
    if check and result.returncode != 0:
        detail = result.stderr.strip() or f"exit code {result.returncode}"
        raise LabError(Message("ip {command}: {detail}", command=" ".join(args), detail=detail))
    return result.stdout


def _namespaces() -> set[str]:
    return {line.split()[0] for line in _ip("netns", "list", check=False).splitlines() if line}


def log_tail(path: str, lines: int = 5) -> str:
    """The last ``lines`` of the log at ``path`` on one line; empty when there is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            return " | ".join(log.read().strip().splitlines()[-lines:])
    except OSError:
        return ""


def create_namespaces(
    name: str,
    client_ip: str,
    server_ip: str,
    host_name: str,
    client_ip6: str | None = None,
    server_ip6: str | None = None,
) -> list[int]:
    """Make the namespaces of network ``name``, joined by nothing yet; return the TUN fds.

    The client namespace gets TUN ``<name>-c`` as ``client_ip`` (and ``client_ip6``), the
    server namespace ``<name>-s`` as ``server_ip`` (and ``server_ip6``), point to point;
    both resolve through a DNS server
    on ``server_ip``, and the server namespace knows ``host_name`` from its hosts
    file. The caller passes the two fds (client, server) to the link and closes them.
    """
    client_ns, server_ns = namespaces_of(name)
    for namespace in (client_ns, server_ns):
        _ip("netns", "add", namespace)
    tuns = (f"{name}-c", f"{name}-s")
    fds: list[int] = []
    try:
        for tun in tuns:
            fds.append(open_tun(tun))
        configure_tun(client_ns, tuns[0], client_ip, server_ip, client_ip6, server_ip6)
        configure_tun(server_ns, tuns[1], server_ip, client_ip, server_ip6, client_ip6)
        write_resolver(client_ns, server_ip)
        write_resolver(server_ns, server_ip, {host_name: server_ip})
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def remove(name: str) -> bool:
    """Stop every process of network ``name`` by PID, then remove its namespaces and files."""
    state = NetState.load(name)
    found = state is not None
    if state is not None:
        _terminate([p for p in (*state.servers, state.link) if p is not None])
    present = _namespaces()
    for namespace in namespaces_of(name):
        remove_resolver(namespace)
        if namespace in present:
            found = True
            pids = _ip("netns", "pids", namespace, check=False).split()
            _terminate([process_id(int(pid)) for pid in pids if pid.isdigit()])
            _ip("netns", "delete", namespace)
    for path in (f"{name}.json", f"{name}.sock"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(STATE_DIR, path))
    for entry in os.listdir(STATE_DIR) if os.path.isdir(STATE_DIR) else ():
        if entry.startswith(f"{name}-") and entry.endswith(".log"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(STATE_DIR, entry))
    with contextlib.suppress(OSError):
        os.rmdir(STATE_DIR)
    return found


def clear_stale(name: str) -> None:
    """Remove what a crashed run left, or refuse when the network is in use."""
    state = NetState.load(name)
    if state is not None and alive(state.link):
        if state.owner is None:
            raise LabError(
                Message(
                    "lab network {name!r} is up; remove it with `latdoc lab net down`", name=name
                )
            )
        if alive(state.owner):
            raise LabError(
                Message(
                    "lab network {name!r} is in use by process {pid}",
                    name=name,
                    pid=state.owner[0],
                )
            )
    remove(name)
