"""Real forward proxies on loopback, started and stopped by a test: Debian's
``tinyproxy`` (HTTP forwarding and ``CONNECT``) and ``microsocks`` (SOCKS5).

Each runs in the foreground as one process the test owns by its PID, on a free
loopback port, with its config and log in the test's own directory.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 10.0

_TINYPROXY_CONFIG = """\
Port {port}
Listen 127.0.0.1
Timeout 60
LogFile "{run}/tinyproxy.log"
LogLevel Connect
PidFile "{run}/tinyproxy.pid"
MaxClients 64
Allow 127.0.0.1
DisableViaHeader Yes
{extra}
"""


def binary(name: str) -> str | None:
    """The executable ``name`` (``tinyproxy``, ``microsocks``), or ``None``."""
    return shutil.which(name) or next(
        (p for d in ("/usr/bin", "/usr/sbin") if Path(p := f"{d}/{name}").is_file()), None
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class RunningProxy:
    host: str
    port: int
    log: Path | None

    def url(self, scheme: str = "http", auth: str = "") -> str:
        return f"{scheme}://{auth}{self.host}:{self.port}"

    def log_text(self) -> str:
        return "" if self.log is None or not self.log.exists() else self.log.read_text()


@contextmanager
def _running(argv: list[str], port: int, what: str) -> Iterator[None]:
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if child.poll() is not None:
                assert child.stderr is not None
                raise RuntimeError(f"{what} exited: {child.stderr.read().decode()[-500:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{what} did not listen on {port}") from None
                time.sleep(0.05)
        yield
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if child.stderr is not None:
            child.stderr.close()


@contextmanager
def tinyproxy(
    run_dir: Path, *, auth: tuple[str, str] | None = None, connect_ports: tuple[int, ...] = ()
) -> Iterator[RunningProxy]:
    """A tinyproxy on ``127.0.0.1``: ``auth`` asks clients for Basic credentials (407
    without them); ``connect_ports`` allows ``CONNECT`` to those ports only (403 for
    others; empty: every port)."""
    exe = binary("tinyproxy")
    if exe is None:
        raise RuntimeError("tinyproxy is not installed")
    run_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    extra = [f"ConnectPort {p}" for p in connect_ports]
    if auth is not None:
        extra.append(f"BasicAuth {auth[0]} {auth[1]}")
    config = run_dir / "tinyproxy.conf"
    config.write_text(_TINYPROXY_CONFIG.format(port=port, run=run_dir, extra="\n".join(extra)))
    with _running([exe, "-d", "-c", str(config)], port, "tinyproxy"):
        yield RunningProxy("127.0.0.1", port, run_dir / "tinyproxy.log")


@contextmanager
def microsocks(auth: tuple[str, str] | None = None) -> Iterator[RunningProxy]:
    """A microsocks SOCKS5 server on ``127.0.0.1``, asking for ``auth`` when given."""
    exe = binary("microsocks")
    if exe is None:
        raise RuntimeError("microsocks is not installed")
    port = free_port()
    argv = [exe, "-i", "127.0.0.1", "-p", str(port)]
    if auth is not None:
        argv += ["-u", auth[0], "-P", auth[1]]
    with _running(argv, port, "microsocks"):
        yield RunningProxy("127.0.0.1", port, None)


@contextmanager
def slow_answering(upstream: RunningProxy, delay_s: float) -> Iterator[RunningProxy]:
    """``upstream`` behind a relay on loopback that holds the proxy's first answer on
    each connection (its reply to ``CONNECT``) for ``delay_s``: a proxy slow to open
    its tunnels, as a far or busy one is. Everything else passes as it comes."""
    import asyncio
    import threading

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    port = free_port()

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, hold: float) -> None:
        first = True
        try:
            while data := await src.read(65536):
                if first and hold:
                    await asyncio.sleep(hold)
                first = False
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            dst.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(upstream.host, upstream.port)
        await asyncio.gather(pipe(reader, up_writer, 0.0), pipe(up_reader, writer, delay_s))

    async def main() -> None:
        server = await asyncio.start_server(relay, "127.0.0.1", port)
        ready.set()
        async with server:
            await asyncio.Event().wait()

    task: list[asyncio.Task[None]] = []

    def run() -> None:
        task.append(loop.create_task(main()))
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(task[0])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if not ready.wait(START_TIMEOUT_S):
        raise RuntimeError("the relay did not start")
    try:
        yield RunningProxy("127.0.0.1", port, upstream.log)
    finally:
        loop.call_soon_threadsafe(task[0].cancel)
        thread.join(timeout=5)
        if not thread.is_alive():
            loop.close()
