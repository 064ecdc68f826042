"""A real nginx (Debian's) in front of a loopback upstream, started and stopped by a test.

nginx runs in the foreground as one process (``master_process off``), so the test
owns exactly one PID and stops it by that PID; its config, pid file, logs and temp
directories live in the test's own directory.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT_S = 10.0

_CONFIG = """\
daemon off;
master_process off;
worker_processes 1;
pid {run}/nginx.pid;
error_log {run}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {run}/body;
    proxy_temp_path {run}/proxy;
    fastcgi_temp_path {run}/fastcgi;
    uwsgi_temp_path {run}/uwsgi;
    scgi_temp_path {run}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass {upstream};
            proxy_http_version {http_version};
            proxy_set_header Connection "";
            proxy_buffering {buffering};
            proxy_buffer_size {buffer};
            proxy_buffers {buffers} {buffer};
            proxy_busy_buffers_size {busy};
            proxy_max_temp_file_size {temp_file};
            proxy_read_timeout 60s;
        }}
    }}
}}
"""


def nginx_binary() -> str | None:
    """The nginx executable, or ``None`` when it is not installed."""
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(p).is_file()), None
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def nginx_proxy(
    upstream: str,
    run_dir: Path,
    *,
    buffering: bool,
    http_version: str = "1.1",
    buffer_kb: int = 64,
) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of an nginx proxying to ``upstream`` (``http://host:port``).

    With ``buffering``, nginx holds up to 16 buffers of ``buffer_kb`` in memory and none on
    disk: a response larger than that is passed on a buffer at a time."""
    binary = nginx_binary()
    if binary is None:
        raise RuntimeError("nginx is not installed")
    run_dir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    config = run_dir / "nginx.conf"
    config.write_text(
        _CONFIG.format(
            run=run_dir,
            port=port,
            upstream=upstream,
            buffering="on" if buffering else "off",
            http_version=http_version,
            buffer=f"{buffer_kb}k",
            buffers=16,
            busy=f"{buffer_kb * 8}k",
            temp_file="0",
        )
    )
    child = subprocess.Popen(
        [binary, "-p", str(run_dir), "-c", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if child.poll() is not None:
                assert child.stderr is not None
                raise RuntimeError(f"nginx exited: {child.stderr.read().decode()[-500:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"nginx did not listen on {port}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGQUIT)
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if child.stderr is not None:
            child.stderr.close()
