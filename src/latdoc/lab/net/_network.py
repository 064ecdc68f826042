"""An impaired network with known truth: two network namespaces joined by a user-space link.

A :class:`LabNet` creates a client and a server namespace, a TUN device in each
(``10.77.0.1`` and ``10.77.0.2``, point to point, and ``fd77::1`` and ``fd77::2``
over IPv6) and a link process
(:mod:`latdoc.lab.net._link_daemon`) that carries every IP packet between them with the
delay, jitter, rate limit and loss of its :class:`LinkSettings`. The same process
answers DNS for the lab host name (:mod:`latdoc.lab.net._dns`) on the server address,
and the client namespace resolves through it (``/etc/netns/<client>/``), so a
client started with :meth:`LabNet.run_client` pays real DNS, TCP and TLS round
trips. A TCP proxy would end the client's handshake locally; this does not.

Needs root. Everything is removed on exit, by PID and by name, and leftovers of a
crashed run with the same name are removed before a new one starts. What is running
is recorded in ``/run/latdoc-net/<name>.json`` so ``latdoc lab net`` can change or
remove a network that outlives the command that started it. The namespaces, that
state file and the processes' PIDs are handled in :mod:`latdoc.lab.net._netns`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from latdoc.errors import LabError, UsageError
from latdoc.i18n import N_, Message
from latdoc.lab._service import Service
from latdoc.lab.net._link import LinkSettings, LinkStats, control
from latdoc.lab.net._netns import (
    STATE_DIR,
    NetState,
    alive,
    check_name,
    child_env,
    clear_stale,
    create_namespaces,
    log_tail,
    namespaces_of,
    process_id,
    remove,
    require_root,
    stop_children,
    teardown,
)

__all__ = [
    "CLIENT_IP",
    "CLIENT_IP6",
    "SERVER_IP",
    "SERVER_IP6",
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
CLIENT_IP6 = "fd77::1"
SERVER_IP6 = "fd77::2"

_HOST = re.compile(r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z][a-z0-9-]{0,61}")
_READY_TIMEOUT_S = 15.0
_POLL_S = 0.01
_CLIENT_TIMEOUT_S = 120.0
_ANNOUNCE = re.compile(r"latdoc lab: model .* at (\S+)")
_CA = re.compile(r"latdoc lab: CA certificate (\S+)")


@dataclass(frozen=True)
class NetSettings:
    """The link's impairments, the DNS delay and the name DNS answers for.

    With ``aaaa`` DNS answers the name's ``AAAA`` query with the server's IPv6 address
    too, which the client's resolver puts before the IPv4 one; with the link's
    ``drop_ipv6`` that address is black-holed, as on a host whose IPv6 route is broken.
    """

    link: LinkSettings = field(default_factory=LinkSettings)
    dns_delay_ms: float = 0.0
    host_name: str = "api.lab.test"
    aaaa: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.dns_delay_ms <= 60_000:
            raise UsageError(
                Message(
                    "DNS delay must be 0 to 60000 ms, got {dns_delay_ms:g}",
                    dns_delay_ms=self.dns_delay_ms,
                )
            )
        if not _HOST.fullmatch(self.host_name):
            raise UsageError(
                Message("not a lowercase host name: {host_name!r}", host_name=self.host_name)
            )


@dataclass(frozen=True)
class LabEndpoint:
    """The simulated endpoint serving in the server namespace."""

    base_url: str
    """By the lab host name, which the client resolves through the lab DNS, e.g.
    ``https://api.lab.test:8000/v1``; the TLS certificate is issued for this name."""
    ip_url: str
    """The same by address, e.g. ``https://10.77.0.2:8000/v1``: no DNS; with TLS the
    certificate covers the address too, so it verifies with :attr:`ca_file`."""
    ca_file: str | None
    pid: int


class LabNet(Service):
    """The impaired network; a context manager that removes everything on exit."""

    def __init__(self, settings: NetSettings | None = None, *, name: str = "latdoc") -> None:
        self.name = check_name(name)
        self.settings = settings or NetSettings()
        self.client_ns, self.server_ns = namespaces_of(name)
        self.client_ip = CLIENT_IP
        self.server_ip = SERVER_IP
        self.host_name = self.settings.host_name
        self._state = NetState(
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

    @classmethod
    def attach(cls, name: str = "latdoc") -> LabNet:
        """The running network ``name`` (started by another process), to change or stop."""
        check_name(name)
        require_root()
        state = NetState.load(name)
        if state is None or not alive(state.link):
            raise LabError(
                Message(
                    "lab network {name!r} is not up; start it with `latdoc lab net up`", name=name
                )
            )
        net = cls(_settings_from_dict(state.settings), name=name)
        net._state = state
        net._running = net._owned = True
        return net

    def start(self, *, detach: bool = False, lifetime_s: float = 12 * 3600.0) -> None:
        """Create the namespaces, the link and DNS. ``detach``: outlive this process."""
        require_root()
        if importlib.util.find_spec("dnslib") is None:
            raise LabError(N_("the lab DNS server needs dnslib: pip install dnslib"))
        if self._running:
            raise LabError(Message("lab network {name!r} is already running", name=self.name))
        clear_stale(self.name)
        self._running = self._owned = True
        try:
            self._state.owner = None if detach else process_id(os.getpid())
            self._state.servers = []
            self._state.save()
            self._create(detach, lifetime_s)
        except BaseException as exc:
            self._stop_after(exc)
            raise

    def _create(self, detach: bool, lifetime_s: float) -> None:
        fds = create_namespaces(
            self.name, CLIENT_IP, SERVER_IP, self.host_name, CLIENT_IP6, SERVER_IP6
        )
        try:
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
            "address6": SERVER_IP6 if self.settings.aaaa else None,
        }
        argv = [
            "ip", "netns", "exec", self.server_ns,
            sys.executable, "-m", "latdoc.lab.net._link_daemon",
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
                env=child_env(),
                start_new_session=detach,
            )
        if not detach:
            self._children.append(process)
        self._state.link = process_id(process.pid)
        self._state.save()

    def _wait_ready(self) -> None:
        link = self._state.link
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if not alive(link):
                break
            try:
                control(self._state.control_path, {"op": "ping"}, timeout=1.0)
            except LabError:
                time.sleep(_POLL_S)
                continue
            return
        log = log_tail(self._state.log_path("link"))
        raise LabError(Message("the lab link did not start: {log}", log=log or "no output"))

    def set(self, link: LinkSettings | None = None, dns_delay_ms: float | None = None) -> None:
        """Change the link's impairments and/or the DNS delay while it runs."""
        settings = NetSettings(
            link or self.settings.link,
            self.settings.dns_delay_ms if dns_delay_ms is None else dns_delay_ms,
            self.settings.host_name,
            self.settings.aaaa,
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
        """Packets delivered, lost and dropped in each direction, DNS queries answered,
        and how late the link itself forwarded (:class:`LinkLag`)."""
        self._require_running()
        answer = control(self._state.control_path, {"op": "stats"})
        return LinkStats.from_dict(answer["stats"])

    def spawn_server(self, argv: list[str], **popen: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` in the server namespace; it is stopped (by PID) with the network."""
        self._require_running()
        popen.setdefault("stdin", subprocess.DEVNULL)
        popen.setdefault("env", child_env())
        detached = self._state.owner is None
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.server_ns, *argv], start_new_session=detached, **popen
        )
        if not detached:
            self._children.append(process)
        self._state.servers.append(process_id(process.pid))
        self._state.save()
        return process

    def start_endpoint(
        self, args: list[str] | None = None, *, port: int = 8000, tls: bool = False
    ) -> LabEndpoint:
        """Start ``latdoc lab serve`` with extra ``args`` on the lab host name and port.

        The server namespace resolves the host name to the server address from its
        ``hosts`` file, so the server binds that address; its TLS certificate names
        the host and the address, so both :attr:`LabEndpoint.base_url` and
        :attr:`LabEndpoint.ip_url` verify with :attr:`LabEndpoint.ca_file`.
        """
        argv = [sys.executable, "-m", "latdoc", "lab", "serve"]
        argv += ["--host", self.host_name, "--port", str(port)]
        argv += ["--tls", "--tls-name", SERVER_IP] if tls else []
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
        raise LabError(
            Message("the lab endpoint did not start: {log}", log=log_tail(log_path) or "no output")
        )

    def client_argv(self, argv: list[str]) -> list[str]:
        """``argv`` as a command that runs in the client namespace."""
        return ["ip", "netns", "exec", self.client_ns, *argv]

    def run_client(self, argv: list[str], **run: Any) -> subprocess.CompletedProcess[Any]:
        """Run ``argv`` in the client namespace (``subprocess.run`` arguments; 120 s timeout)."""
        self._require_running()
        run.setdefault("timeout", _CLIENT_TIMEOUT_S)
        run.setdefault("env", child_env())
        return subprocess.run(self.client_argv(argv), **run)

    @property
    def pids(self) -> tuple[int, ...]:
        """The processes this network started and stops: the link, then each server."""
        state = self._state
        return tuple(p[0] for p in (state.link, *state.servers) if p is not None)

    def _require_running(self) -> None:
        if not self._running:
            raise LabError(Message("lab network {name!r} is not running", name=self.name))

    def stop(self) -> None:
        """Stop every process by PID, then remove the namespaces and files."""
        if not self._owned:
            return
        self._running = self._owned = False
        children, self._children = self._children, []
        try:
            stop_children(children)
        finally:
            remove(self.name)


def _settings_to_dict(settings: NetSettings) -> dict[str, Any]:
    return {
        "link": settings.link.to_dict(),
        "dns_delay_ms": settings.dns_delay_ms,
        "host_name": settings.host_name,
        "aaaa": settings.aaaa,
    }


def _settings_from_dict(fields: dict[str, Any]) -> NetSettings:
    return NetSettings(
        LinkSettings.from_dict(fields["link"]),
        fields["dns_delay_ms"],
        fields["host_name"],
        bool(fields.get("aaaa", False)),
    )
