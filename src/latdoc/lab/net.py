"""An impaired network with known truth: two network namespaces joined by a user-space link.

A :class:`LabNet` creates a client and a server namespace, a TUN device in each
(``10.77.0.1`` and ``10.77.0.2``, point to point) and a link process
(:mod:`latdoc.lab.link`) that carries every IP packet between them with the
delay, jitter, rate limit and loss of its :class:`LinkSettings`. The same process
answers DNS for the lab host name (:mod:`latdoc.lab.dns`) on the server address,
and the client namespace resolves through it (``/etc/netns/<client>/``), so a
client started with :meth:`LabNet.run_client` pays real DNS, TCP and TLS round
trips. A TCP proxy would end the client's handshake locally; this does not.

Needs root. Everything is removed on exit, by PID and by name, and leftovers of a
crashed run with the same name are removed before a new one starts. What is running
is recorded in ``/run/latdoc-net/<name>.json`` so ``latdoc lab net`` can change or
remove a network that outlives the command that started it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from types import TracebackType
from typing import Any, Self

from latdoc.errors import LabError, UsageError
from latdoc.lab.dns import remove_resolver, write_resolver
from latdoc.lab.link import LinkSettings, LinkStats, configure_tun, control, open_tun

__all__ = [
    "CLIENT_IP",
    "SERVER_IP",
    "STATE_DIR",
    "LabEndpoint",
    "LabNet",
    "LinkSettings",
    "LinkStats",
    "NetSettings",
    "require_root",
    "teardown",
]

CLIENT_IP = "10.77.0.1"
SERVER_IP = "10.77.0.2"
STATE_DIR = "/run/latdoc-net"
ROOT_HINT = "the impaired network needs root (network namespaces, TUN devices); run as root or skip"

_NAME = re.compile(r"[a-z][a-z0-9-]{0,11}")
_HOST = re.compile(r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z][a-z0-9-]{0,61}")
_READY_TIMEOUT_S = 15.0
_STOP_GRACE_S = 5.0
_POLL_S = 0.01
_CLIENT_TIMEOUT_S = 120.0
_IP_TIMEOUT_S = 10.0
_ANNOUNCE = re.compile(r"latdoc lab: model .* at (\S+)")
_CA = re.compile(r"latdoc lab: CA certificate (\S+)")

ProcessId = tuple[int, int]
"""A PID and the process's start time (clock ticks since boot), which a reused PID lacks."""


@dataclass(frozen=True)
class NetSettings:
    """The link's impairments, the DNS delay and the name DNS answers for."""

    link: LinkSettings = field(default_factory=LinkSettings)
    dns_delay_ms: float = 0.0
    host_name: str = "api.lab.test"

    def __post_init__(self) -> None:
        if not 0 <= self.dns_delay_ms <= 60_000:
            raise UsageError(f"DNS delay must be 0 to 60000 ms, got {self.dns_delay_ms:g}")
        if not _HOST.fullmatch(self.host_name):
            raise UsageError(f"not a lowercase host name: {self.host_name!r}")


@dataclass(frozen=True)
class LabEndpoint:
    """The simulated endpoint serving in the server namespace."""

    base_url: str
    """By the lab host name, which the client resolves through the lab DNS, e.g.
    ``https://api.lab.test:8000/v1``; the TLS certificate is issued for this name."""
    ip_url: str
    """The same by address, e.g. ``https://10.77.0.2:8000/v1``: no DNS, and with TLS
    the certificate does not cover it (probe it with ``insecure``)."""
    ca_file: str | None
    pid: int


def require_root() -> None:
    """Raise :class:`LabError` saying why the impaired network cannot run here."""
    if os.geteuid() != 0:
        raise LabError(f"{ROOT_HINT} (running as uid {os.geteuid()})")
    if shutil.which("ip") is None:
        raise LabError(f"{ROOT_HINT} (the `ip` command of iproute2 is missing)")
    try:
        os.close(os.open("/dev/net/tun", os.O_RDWR))
    except OSError as exc:
        raise LabError(f"{ROOT_HINT} (cannot open /dev/net/tun: {exc.strerror})") from None


def teardown(name: str) -> bool:
    """Remove lab network ``name``: its processes, namespaces and files. Whether any existed."""
    _check_name(name)
    require_root()
    return _remove(name)


def _check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"invalid lab network name {name!r}: 1-12 of a-z, 0-9 and '-', starting with a letter"
        )
    return name


def _child_env() -> dict[str, str]:
    """This environment, with latdoc importable even when it is not installed."""
    env = dict(os.environ)
    source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
    return env


@dataclass
class _State:
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
    def load(cls, name: str) -> _State | None:
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


def _process_id(pid: int) -> ProcessId:
    return pid, _start_time(pid) or 0


def _start_time(pid: int) -> int | None:
    """The start time of a running process; ``None`` for none or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def _alive(process: ProcessId | None) -> bool:
    return process is not None and _start_time(process[0]) == process[1]


def _terminate(processes: list[ProcessId]) -> None:
    """SIGTERM, then SIGKILL whatever still runs after the grace period; by PID only."""
    for sig, grace in ((signal.SIGTERM, _STOP_GRACE_S), (signal.SIGKILL, 1.0)):
        running = [p for p in processes if _alive(p)]
        for pid, _ in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while running and time.monotonic() < deadline:
            time.sleep(_POLL_S)
            running = [p for p in running if _alive(p)]
        if not running:
            return


def _stop_children(children: list[subprocess.Popen[Any]]) -> None:
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
        raise LabError(f"ip {' '.join(args)}: {detail}")
    return result.stdout


def _namespaces() -> set[str]:
    return {line.split()[0] for line in _ip("netns", "list", check=False).splitlines() if line}


def _tail(path: str, lines: int = 5) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            return " | ".join(log.read().strip().splitlines()[-lines:])
    except OSError:
        return ""


def _remove(name: str) -> bool:
    """Stop every process of network ``name`` by PID, then remove its namespaces and files."""
    namespaces = (f"{name}-client", f"{name}-server")
    state = _State.load(name)
    found = state is not None
    if state is not None:
        _terminate([p for p in (*state.servers, state.link) if p is not None])
    present = _namespaces()
    for namespace in namespaces:
        remove_resolver(namespace)
        if namespace in present:
            found = True
            pids = _ip("netns", "pids", namespace, check=False).split()
            _terminate([_process_id(int(pid)) for pid in pids if pid.isdigit()])
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


def _clear_stale(name: str) -> None:
    """Remove what a crashed run left, or refuse when the network is in use."""
    state = _State.load(name)
    if state is not None and _alive(state.link):
        if state.owner is None:
            raise LabError(f"lab network {name!r} is up; remove it with `latdoc lab net down`")
        if _alive(state.owner):
            raise LabError(f"lab network {name!r} is in use by process {state.owner[0]}")
    _remove(name)


class LabNet:
    """The impaired network; a context manager that removes everything on exit."""

    def __init__(self, settings: NetSettings | None = None, *, name: str = "latdoc") -> None:
        self.name = _check_name(name)
        self.settings = settings or NetSettings()
        self.client_ns = f"{name}-client"
        self.server_ns = f"{name}-server"
        self.client_ip = CLIENT_IP
        self.server_ip = SERVER_IP
        self.host_name = self.settings.host_name
        self._state = _State(
            name=name,
            client_ns=self.client_ns,
            server_ns=self.server_ns,
            server_ip=SERVER_IP,
            host_name=self.host_name,
            settings=_settings_to_dict(self.settings),
        )
        self._children: list[subprocess.Popen[Any]] = []
        self._running = False
        self._owned = False

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.stop()
        except LabError as error:
            if exc is None:
                raise
            exc.add_note(f"and the lab network was not cleaned up: {error}")

    @classmethod
    def attach(cls, name: str = "latdoc") -> LabNet:
        """The running network ``name`` (started by another process), to change or stop."""
        _check_name(name)
        require_root()
        state = _State.load(name)
        if state is None or not _alive(state.link):
            raise LabError(f"lab network {name!r} is not up; start it with `latdoc lab net up`")
        net = cls(_settings_from_dict(state.settings), name=name)
        net._state = state
        net._running = net._owned = True
        return net

    def start(self, *, detach: bool = False, lifetime_s: float = 12 * 3600.0) -> None:
        """Create the namespaces, the link and DNS. ``detach``: outlive this process."""
        require_root()
        if importlib.util.find_spec("dnslib") is None:
            raise LabError("the lab DNS server needs dnslib: pip install dnslib")
        if self._running:
            raise LabError(f"lab network {self.name!r} is already running")
        _clear_stale(self.name)
        self._running = self._owned = True
        try:
            self._state.owner = None if detach else _process_id(os.getpid())
            self._state.servers = []
            self._state.save()
            self._create(detach, lifetime_s)
        except BaseException as exc:
            self.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def _create(self, detach: bool, lifetime_s: float) -> None:
        for namespace in (self.client_ns, self.server_ns):
            _ip("netns", "add", namespace)
        tuns = (f"{self.name}-c", f"{self.name}-s")
        fds: list[int] = []
        try:
            for tun in tuns:
                fds.append(open_tun(tun))
            configure_tun(self.client_ns, tuns[0], CLIENT_IP, SERVER_IP)
            configure_tun(self.server_ns, tuns[1], SERVER_IP, CLIENT_IP)
            write_resolver(self.client_ns, SERVER_IP)
            write_resolver(self.server_ns, SERVER_IP, {self.host_name: SERVER_IP})
            self._start_link(fds[0], fds[1], detach, lifetime_s)
        finally:
            for fd in fds:
                os.close(fd)
        self._wait_ready()

    def _start_link(self, client_fd: int, server_fd: int, detach: bool, lifetime_s: float) -> None:
        dns = {
            "bind": SERVER_IP,
            "host_name": self.host_name,
            "address": SERVER_IP,
            "delay_ms": self.settings.dns_delay_ms,
        }
        argv = [
            "ip", "netns", "exec", self.server_ns,
            sys.executable, "-m", "latdoc.lab.link",
            "--client-fd", str(client_fd),
            "--server-fd", str(server_fd),
            "--control", self._state.control_path,
            "--settings", json.dumps(self.settings.link.to_dict()),
            "--dns", json.dumps(dns),
            "--lifetime-s", str(lifetime_s),
        ]  # fmt: skip
        if not detach:
            argv += ["--parent-pid", str(os.getpid())]
        with open(self._state.log_path("link"), "ab") as log:
            process = subprocess.Popen(
                argv,
                pass_fds=(client_fd, server_fd),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=_child_env(),
                start_new_session=detach,
            )
        if not detach:
            self._children.append(process)
        self._state.link = _process_id(process.pid)
        self._state.save()

    def _wait_ready(self) -> None:
        link = self._state.link
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if not _alive(link):
                break
            try:
                control(self._state.control_path, {"op": "ping"}, timeout=1.0)
            except LabError:
                time.sleep(_POLL_S)
                continue
            return
        log = _tail(self._state.log_path("link"))
        raise LabError(f"the lab link did not start: {log or 'no output'}")

    def set(self, link: LinkSettings | None = None, dns_delay_ms: float | None = None) -> None:
        """Change the link's impairments and/or the DNS delay while it runs."""
        settings = NetSettings(
            link or self.settings.link,
            self.settings.dns_delay_ms if dns_delay_ms is None else dns_delay_ms,
            self.settings.host_name,
        )
        self._require_running()
        control(
            self._state.control_path,
            {"op": "set", "link": settings.link.to_dict(), "dns_delay_ms": settings.dns_delay_ms},
        )
        self.settings = settings
        self._state.settings = _settings_to_dict(settings)
        self._state.save()

    def stats(self) -> LinkStats:
        """Packets delivered, lost and dropped in each direction, and DNS queries answered."""
        self._require_running()
        answer = control(self._state.control_path, {"op": "stats"})
        return LinkStats.from_dict(answer["stats"])

    def spawn_server(self, argv: list[str], **popen: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` in the server namespace; it is stopped (by PID) with the network."""
        self._require_running()
        popen.setdefault("stdin", subprocess.DEVNULL)
        popen.setdefault("env", _child_env())
        detached = self._state.owner is None
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.server_ns, *argv], start_new_session=detached, **popen
        )
        if not detached:
            self._children.append(process)
        self._state.servers.append(_process_id(process.pid))
        self._state.save()
        return process

    def start_endpoint(
        self, args: list[str] | None = None, *, port: int = 8000, tls: bool = False
    ) -> LabEndpoint:
        """Start ``latdoc lab serve`` with extra ``args`` on the lab host name and port.

        The server namespace resolves the host name to the server address from its
        ``hosts`` file, so the server binds that address and its TLS certificate
        names the host.
        """
        argv = [sys.executable, "-m", "latdoc.cli", "lab", "serve"]
        argv += ["--host", self.host_name, "--port", str(port), *(["--tls"] if tls else [])]
        argv += args or []
        log_path = self._state.log_path(f"endpoint-{port}")
        with open(log_path, "wb") as log:
            process = self.spawn_server(argv, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + _READY_TIMEOUT_S * 2
        while time.monotonic() < deadline and process.poll() is None:
            with open(log_path, encoding="utf-8", errors="replace") as log_text:
                text = log_text.read()
            url, ca = _ANNOUNCE.search(text), _CA.search(text)
            if url is not None and (ca is not None or not tls):
                base_url = url.group(1)
                ip_url = base_url.replace(f"//{self.host_name}:", f"//{SERVER_IP}:", 1)
                ca_file = ca.group(1) if ca is not None else None
                return LabEndpoint(base_url, ip_url, ca_file, process.pid)
            time.sleep(_POLL_S * 5)
        raise LabError(f"the lab endpoint did not start: {_tail(log_path) or 'no output'}")

    def client_argv(self, argv: list[str]) -> list[str]:
        """``argv`` as a command that runs in the client namespace."""
        return ["ip", "netns", "exec", self.client_ns, *argv]

    def run_client(self, argv: list[str], **run: Any) -> subprocess.CompletedProcess[Any]:
        """Run ``argv`` in the client namespace (``subprocess.run`` arguments; 120 s timeout)."""
        self._require_running()
        run.setdefault("timeout", _CLIENT_TIMEOUT_S)
        run.setdefault("env", _child_env())
        return subprocess.run(self.client_argv(argv), **run)

    @property
    def pids(self) -> tuple[int, ...]:
        """The processes this network started and stops: the link, then each server."""
        state = self._state
        return tuple(p[0] for p in (state.link, *state.servers) if p is not None)

    def _require_running(self) -> None:
        if not self._running:
            raise LabError(f"lab network {self.name!r} is not running")

    def stop(self) -> None:
        """Stop every process by PID, then remove the namespaces and files."""
        if not self._owned:
            return
        self._running = self._owned = False
        children, self._children = self._children, []
        try:
            _stop_children(children)
        finally:
            _remove(self.name)


def _settings_to_dict(settings: NetSettings) -> dict[str, Any]:
    return {
        "link": settings.link.to_dict(),
        "dns_delay_ms": settings.dns_delay_ms,
        "host_name": settings.host_name,
    }


def _settings_from_dict(fields: dict[str, Any]) -> NetSettings:
    return NetSettings(
        LinkSettings.from_dict(fields["link"]), fields["dns_delay_ms"], fields["host_name"]
    )
