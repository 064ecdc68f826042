"""A real Ray cluster on loopback, for tests, benchmarks and demos: :class:`LocalRayCluster`.

A head and more nodes, each a ``ray start --block`` process of its own (in a
session of its own) with its CPUs and custom resources (``{"vantage:b": 1}``), all
on 127.0.0.1 with ports picked free, and a short temporary directory for Ray's
sockets and logs. :meth:`~LocalRayCluster.start` returns once every node's
resources are in the cluster, within ``timeout`` seconds. :meth:`~LocalRayCluster.stop`
ends exactly the processes of those sessions (the nodes, their raylets, Ray's
worker processes): SIGTERM, then SIGKILL after a grace period, and removes the
directory. Ray itself is not imported here: the ``ray`` command line starts it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from latdoc.errors import LabError
from latdoc.i18n import N_, Message
from latdoc.lab._service import Service

__all__ = ["LocalRayCluster", "RayNode"]

STOP_GRACE_S = 2.0
"""How long the nodes may take to exit on SIGTERM before SIGKILL: a lab cluster keeps
nothing worth a longer wait."""
_POLL_S = 1.0


@dataclass(frozen=True)
class RayNode:
    """One node: its CPUs and custom resources."""

    cpus: int = 1
    resources: Mapping[str, float] = field(default_factory=dict)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


STARTUP_TIMED_OUT = "timed out during startup"
"""What a Ray node says when its raylet did not register within Ray's fixed 30 s: on a
machine busy with other work (three test workers and more beside them) it happens, and
says nothing of latdoc."""
STARTUP_TRIES = 2
"""How many times a cluster is started before its failure is the caller's."""


class LocalRayCluster(Service):
    """Ray nodes on loopback; the first is the head. ``address`` is ``127.0.0.1:PORT``.

    ``env`` is added to every node's environment (``PYTHONPATH``, so Ray's worker
    processes import the same code as the caller).
    """

    def __init__(
        self,
        nodes: Sequence[RayNode] = (RayNode(2), RayNode(1)),
        *,
        ray: str | None = None,
        env: Mapping[str, str] | None = None,
        object_store_mb: int = 80,
        timeout: float = 90.0,
    ) -> None:
        if not nodes:
            raise LabError(N_("a Ray cluster needs at least its head node"))
        self.nodes = tuple(nodes)
        beside = Path(sys.executable).parent / "ray"
        self.ray = ray or (str(beside) if beside.exists() else shutil.which("ray") or "ray")
        self.env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **(env or {})}
        self.object_store_mb = object_store_mb
        self.timeout = timeout
        self.address = ""
        self._dir: str | None = None
        self._procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        """Start the nodes and wait until the cluster has their resources; a cluster
        whose node missed Ray's own startup wait (:data:`STARTUP_TIMED_OUT`) is started
        afresh, up to :data:`STARTUP_TRIES` times."""
        for attempt in range(1, STARTUP_TRIES + 1):
            try:
                self._start_once()
                return
            except LabError as exc:
                self.stop()
                if attempt == STARTUP_TRIES or STARTUP_TIMED_OUT not in str(exc):
                    raise

    def _start_once(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="ldray-", dir="/tmp")
        port = _free_port()
        self.address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + self.timeout
        head, *others = self.nodes
        self._launch(head, ["--head", "--port", str(port), "--include-dashboard", "false"])
        for node in others:
            self._launch(node, ["--address", self.address])
        self._wait_for_resources(deadline)

    def _launch(self, node: RayNode, role: list[str]) -> None:
        assert self._dir is not None
        ports = {
            "--node-manager-port": _free_port(),
            "--object-manager-port": _free_port(),
            "--dashboard-agent-listen-port": _free_port(),
            "--dashboard-agent-grpc-port": _free_port(),
            "--runtime-env-agent-port": _free_port(),
            "--metrics-export-port": _free_port(),
        }
        args = [
            self.ray, "start", *role, "--block", "--disable-usage-stats",
            "--node-ip-address", "127.0.0.1", "--num-cpus", str(node.cpus),
            "--resources", json.dumps(dict(node.resources)),
            "--object-store-memory", str(self.object_store_mb * 1024 * 1024),
            *(str(x) for pair in ports.items() for x in pair),
        ]  # fmt: skip
        if "--head" in role:
            args += ["--temp-dir", self._dir]
        with Path(self._dir, f"node-{len(self._procs)}.log").open("wb") as log:
            self._procs.append(
                subprocess.Popen(
                    args, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
            )

    def _wait_for_resources(self, deadline: float) -> None:
        wanted = {name for node in self.nodes for name in node.resources}
        wanted_cpus = sum(node.cpus for node in self.nodes)
        text = ""
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    raise LabError(
                        Message(
                            "a Ray node exited with code {returncode}: {log}",
                            returncode=proc.returncode,
                            log=self._log(),
                        )
                    )
            status = subprocess.run(
                [self.ray, "status", "--address", self.address],
                env=self.env, capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
            text = status.stdout
            resources = all(f" {name}" in text for name in wanted)
            if status.returncode == 0 and resources and f"/{float(wanted_cpus)} CPU" in text:
                return
            time.sleep(_POLL_S)
        raise LabError(
            Message(
                "the Ray cluster was not up within {timeout:g} s: {log}",
                timeout=self.timeout,
                log=text[-300:],
            )
        )

    def _log(self) -> str:
        if self._dir is None:
            return ""
        logs = sorted(Path(self._dir).glob("node-*.log"))
        return " | ".join(p.read_text(errors="replace")[-300:] for p in logs)

    def pids(self) -> list[int]:
        """Every live process of the cluster's sessions: nodes, raylets, Ray's workers."""
        sessions = {p.pid for p in self._procs}
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if fields[0] != "Z" and int(fields[3]) in sessions:
                found.append(int(entry.name))
        return found

    def stop(self) -> None:
        if not self._procs:
            return
        for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            end = time.monotonic() + wait
            while self.pids() and time.monotonic() < end:
                time.sleep(0.1)
            if not self.pids():
                break
        for proc in self._procs:
            try:
                proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
