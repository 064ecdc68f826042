"""The simulated endpoint in a child process, for timing under load.

A :class:`~latdoc.lab.sim.LabServer` shares the interpreter lock with its
client: a busy client (dozens of concurrent streams) delays the server's timers
by tens of milliseconds. :class:`LabProcess` runs the same server through
:func:`~latdoc.lab.sim.serve_forever` in its own Python process, with the same
attributes, so the latency the client measures is the latency the model planned.
"""

from __future__ import annotations

import dataclasses
import json
import select
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from latdoc.errors import LabError
from latdoc.i18n import N_, Message
from latdoc.lab import tls as lab_tls
from latdoc.lab._service import Service
from latdoc.lab.sim._config import Fault, LabConfig, LatencyModel, TimingForm, UsageShape
from latdoc.lab.sim._server import DEFAULT_CONFIG, LabServer, serve_forever

__all__ = ["LabProcess", "config_from_json", "config_to_json"]

_START_TIMEOUT_S = 30.0
_CHILD = "import sys; from latdoc.lab.sim._process import main; main(sys.argv[1:])"
"""The child's entry point. Not ``-m`` this module: importing its package imports it
first, and runpy would then run a second copy of it as ``__main__``."""
_STOP_TIMEOUT_S = 5.0


def config_to_json(config: LabConfig) -> str:
    """``config`` as JSON, for :func:`config_from_json`."""
    return json.dumps(dataclasses.asdict(config))


def config_from_json(text: str) -> LabConfig:
    """The :class:`LabConfig` written by :func:`config_to_json`."""
    fields: dict[str, Any] = json.loads(text)
    fields["latency"] = LatencyModel(**fields["latency"])
    alt_models = fields.get("alt_models", {})
    fields["alt_models"] = {name: LatencyModel(**model) for name, model in alt_models.items()}
    if "wrong_models" in fields:
        fields["wrong_models"] = tuple(fields["wrong_models"])
    if "load_profile" in fields:
        fields["load_profile"] = tuple(fields["load_profile"])
    if "extra_headers" in fields:
        fields["extra_headers"] = tuple((name, value) for name, value in fields["extra_headers"])
    if fields.get("fault") is not None:
        fields["fault"] = Fault(fields["fault"])
    if "timing_forms" in fields:
        fields["timing_forms"] = tuple(TimingForm(form) for form in fields["timing_forms"])
    if "usage_shape" in fields:
        fields["usage_shape"] = UsageShape(fields["usage_shape"])
    return LabConfig(**fields)


class LabProcess(Service):
    """A lab server in a child process; a context manager like ``LabServer``.

    After start, :attr:`port`, :attr:`base_url` and (with ``tls``) :attr:`ca_file`
    describe the child's server; stop sends SIGTERM and waits for a clean exit.
    ``tls_names`` are more host names or IP addresses its certificate is valid for.
    """

    def __init__(
        self,
        config: LabConfig = DEFAULT_CONFIG,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: bool = False,
        http2: bool = False,
        tls_names: Sequence[str] = (),
    ) -> None:
        self.config = config
        self.host = host
        self.port = port
        self.tls = tls
        self.http2 = http2
        self.tls_names = lab_tls.check_tls_names(tls_names, tls)
        self.base_url = ""
        self.ca_file: str | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs, else ``None``."""
        return None if self._process is None else self._process.pid

    def start(self) -> None:
        """Start the child and return once its server accepts requests."""
        if self._process is not None:
            raise LabError(N_("this lab process is already running"))
        arguments = {
            "config": config_to_json(self.config),
            "host": self.host,
            "port": self.port,
            "tls": self.tls,
            "http2": self.http2,
            "tls_names": list(self.tls_names),
        }
        self._process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(arguments)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        assert self._process.stdout is not None
        ready, _, _ = select.select([self._process.stdout], [], [], _START_TIMEOUT_S)
        line = self._process.stdout.readline() if ready else b""
        if not line:
            code = self._process.poll()
            state = (
                Message.of(N_("still silent"))
                if code is None
                else Message("exit code {code}", code=code)
            )
            self.stop()
            raise LabError(
                Message("lab process did not start ({state}); its stderr says why", state=state)
            )
        announced = json.loads(line)
        self.port = announced["port"]
        self.base_url = announced["base_url"]
        self.ca_file = announced["ca_file"]

    def stop(self) -> None:
        """Ask the child to stop (SIGTERM), wait for it, kill it if it hangs."""
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if process.stdout is not None:
                process.stdout.close()
        self.ca_file = None


def _announce(server: LabServer) -> None:
    line = {"base_url": server.base_url, "port": server.port, "ca_file": server.ca_file}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> None:
    """Child entry point: serve the JSON-described lab until SIGTERM."""
    arguments = json.loads(argv[0])
    serve_forever(
        config_from_json(arguments["config"]),
        arguments["host"],
        arguments["port"],
        arguments["tls"],
        arguments["http2"],
        tls_names=arguments.get("tls_names", ()),
        on_ready=_announce,
    )
