"""Serve the simulated endpoint on a real socket.

:class:`LabServer` runs it on its own event loop in a background thread (for tests
and benchmarks); :func:`serve_forever` blocks (for ``latdoc lab serve``). HTTP/1.1,
plain or TLS, is served by uvicorn; HTTP/2 (TLS, ALPN ``h2`` and ``http/1.1``) by
hypercorn. Both are handed a socket bound and listening here, so the port is known
before the server starts and early connections wait in the backlog.

Stopping ends the streams in flight (they close cleanly without ``[DONE]``), closes
the listener and every connection, and joins the thread, well within a second.
uvicorn and hypercorn are imported only when a server of their kind starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import ssl
import tempfile
import threading
import weakref
from collections.abc import Callable, Collection, Sequence
from typing import Any, cast

from starlette.applications import Starlette

from latdoc.errors import LabError
from latdoc.i18n import N_, Message
from latdoc.lab import tls as lab_tls
from latdoc.lab._service import Service
from latdoc.lab.sim._app import create_app, end_streams
from latdoc.lab.sim._config import LabConfig
from latdoc.lab.sim._faults import delivered, reset_socket

__all__ = ["DEFAULT_CONFIG", "LabServer", "serve_forever"]

DEFAULT_CONFIG = LabConfig()
"""The configuration a :class:`LabServer` uses when given none."""

STOP_TIMEOUT_S = 1.0
_GRACE_S = 0.1
_POLL_S = 0.005
_START_TIMEOUT_S = 10.0
_BACKLOG = 1024
_WILDCARDS = ("", "0.0.0.0", "::")


def _url_host(host: str, tls: bool) -> str:
    if tls and host in ("127.0.0.1", "localhost", "", "0.0.0.0"):
        return "localhost"
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _remove_file(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class _Listener(socket.socket):
    """A listening TCP socket that remembers what it accepted, to abort it on stop
    and to reset one connection for the ``reset`` fault.

    Its connections get ``TCP_NODELAY``: asyncio sets it only on sockets whose
    ``proto`` is ``IPPROTO_TCP`` and Linux copies it from the listener; without it
    Nagle's algorithm would hold small SSE events back behind delayed ACKs.
    """

    def __init__(self, host: str, port: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.accepted: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        try:
            self.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.bind((host, port))
            self.listen(_BACKLOG)
        except OSError:
            self.close()
            raise

    def accept(self) -> tuple[socket.socket, Any]:
        connection, address = super().accept()
        self.accepted.add(connection)
        return connection, address

    async def reset_peer(self, client: tuple[str, int]) -> bool:
        """Reset (TCP RST) the accepted connection from ``client`` once it has been
        delivered what was written to it; say whether it was found."""
        for connection in list(self.accepted):
            try:
                peer = connection.getpeername()
            except OSError:
                continue
            if (peer[0], peer[1]) == client:
                await delivered(connection)
                reset_socket(connection)
                return True
        return False

    def abort_connections(self) -> None:
        """Shut down every accepted connection still open, whatever its state."""
        for connection in list(self.accepted):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class LabServer(Service):
    """The simulated endpoint on a real socket, served from a background thread.

    Use it as a context manager (or call :meth:`start` and :meth:`stop`). After
    start, :attr:`port` is the bound port and :attr:`base_url` the API root (ending
    in ``/v1``); with ``tls`` the URL names ``localhost`` and :attr:`ca_file` is a
    temporary PEM file of the CA that verifies the server, removed on stop (or at
    interpreter exit if the server is never stopped). The certificate is valid for
    ``localhost``, the loopback addresses, ``host`` and every host name or IP
    address in ``tls_names``.
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
        if http2 and not tls:
            raise LabError(N_("the lab serves HTTP/2 only over TLS: pass tls=True with http2=True"))
        self.config = config
        self.host = host
        self.port = port
        self.tls = tls
        self.http2 = http2
        self.tls_names = lab_tls.check_tls_names(tls_names, tls)
        self.base_url = ""
        self.ca_file: str | None = None
        self.app: Starlette | None = None
        self._sock: _Listener | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._remove_ca: weakref.finalize[[str], LabServer] | None = None

    def start(self) -> None:
        """Bind, start the server thread and return once it accepts requests."""
        if self._thread is not None:
            raise LabError(N_("this lab server is already running"))
        try:
            sock = _Listener(self.host, self.port)
        except OSError as exc:
            raise LabError(
                Message(
                    "lab server cannot listen on {host}:{port}: {exc}",
                    host=self.host,
                    port=self.port,
                    exc=str(exc),
                )
            ) from exc
        self._sock = sock
        self.port = sock.getsockname()[1]
        context = None
        if self.tls:
            alpn = ["h2", "http/1.1"] if self.http2 else ["http/1.1"]
            identities = lab_tls.identities_for(self.host, self.tls_names)
            context = lab_tls.server_context(identities, alpn)
            fd, self.ca_file = tempfile.mkstemp(prefix="latdoc-lab-ca-", suffix=".pem")
            with os.fdopen(fd, "wb") as ca:
                ca.write(lab_tls.ca_pem())
            self._remove_ca = weakref.finalize(self, _remove_file, self.ca_file)
        scheme = "https" if self.tls else "http"
        self.base_url = f"{scheme}://{_url_host(self.host, self.tls)}:{self.port}/v1"
        self.app = create_app(self.config, reset_connection=sock.reset_peer)
        self._ready.clear()
        self._error = None
        self._thread = threading.Thread(
            target=self._run,
            args=(sock, self.app, context),
            name=f"latdoc-lab-{self.port}",
            daemon=True,
        )
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT_S) or self._error is not None:
            error = self._error
            self.stop()
            raise LabError(Message("lab server did not start: {error!r}", error=error)) from error

    def stop(self) -> None:
        """End streams in flight, close every connection and join the thread."""
        thread, self._thread = self._thread, None
        if thread is not None:
            loop, event = self._loop, self._stop_event
            if loop is not None and event is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(event.set)
            thread.join(STOP_TIMEOUT_S * 5)
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._remove_ca is not None:
            self._remove_ca()
            self._remove_ca = None
        self.ca_file = None
        self._loop = self._stop_event = None
        if thread is not None and thread.is_alive():
            raise LabError(N_("lab server thread did not stop"))

    def _run(self, sock: _Listener, app: Starlette, context: ssl.SSLContext | None) -> None:
        try:
            asyncio.run(self._main(sock, app, context))
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()

    async def _main(self, sock: _Listener, app: Starlette, context: ssl.SSLContext | None) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        if self.http2:
            assert context is not None
            await _serve_hypercorn(app, sock, context, self._ready, self._stop_event)
        else:
            await _serve_uvicorn(app, sock, context, self._ready, self._stop_event)


async def _serve_uvicorn(
    app: Starlette,
    sock: _Listener,
    context: ssl.SSLContext | None,
    ready: threading.Event,
    stop: asyncio.Event,
) -> None:
    """Serve HTTP/1.1 with uvicorn's protocol on ``sock`` until ``stop`` is set.

    This drives ``Server.startup`` and the shutdown steps itself rather than
    ``Server.serve``, whose main loop polls every 0.1 s and whose shutdown sleeps
    another 0.1 s: tests start and stop many servers.
    """
    import uvicorn

    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        log_config=None,
        access_log=False,
        ws="none",
        # h11, whether httptools (which the probe parses with) is installed or not: the
        # lab's framing and pacing were measured with it, and "auto" would switch.
        http="h11",
        backlog=_BACKLOG,
        ssl_context_factory=None if context is None else (lambda _config, _default: context),
    )
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[sock])
    ready.set()
    await stop.wait()
    end_streams(app)
    for listener in server.servers:
        listener.close()
    state = server.server_state
    for connection in list(state.connections):
        connection.shutdown()
    if not await _drained(state.connections, _GRACE_S):
        sock.abort_connections()
        await _drained(state.connections, _GRACE_S)
    if not await _drained(state.tasks, _GRACE_S):
        for task in list(state.tasks):
            task.cancel()


async def _drained(items: Collection[object], timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``items`` to empty; say whether it did."""
    for _ in range(max(1, round(timeout / _POLL_S))):
        if not items:
            return True
        await asyncio.sleep(_POLL_S)
    return not items


async def _serve_hypercorn(
    app: Starlette,
    sock: _Listener,
    context: ssl.SSLContext,
    ready: threading.Event,
    stop: asyncio.Event,
) -> None:
    """Serve HTTP/2 and HTTP/1.1 (ALPN) with hypercorn on ``sock`` until ``stop`` is set.

    The shutdown trigger doubles as the "started" signal: hypercorn awaits it once
    its listeners are serving.
    """
    from hypercorn.asyncio import serve
    from hypercorn.config import Config, Sockets
    from hypercorn.typing import ASGIFramework

    class _Config(Config):
        @property
        def ssl_enabled(self) -> bool:
            return True

        def create_ssl_context(self) -> ssl.SSLContext:
            return context

        def create_sockets(self) -> Sockets:
            return Sockets([sock], [], [])

    config = _Config()
    config.loglevel = "WARNING"
    config.accesslog = None
    config.graceful_timeout = STOP_TIMEOUT_S

    async def started_then_wait() -> None:
        ready.set()
        await stop.wait()
        end_streams(app)
        asyncio.get_running_loop().call_later(_GRACE_S, sock.abort_connections)

    framework = cast(ASGIFramework, app)
    await serve(framework, config, shutdown_trigger=started_then_wait, mode="asgi")


def _announce(server: LabServer) -> None:
    version = "HTTP/2 and HTTP/1.1" if server.http2 else "HTTP/1.1"
    print(f"latdoc lab: model {server.config.model!r} at {server.base_url} ({version})", flush=True)
    if server.ca_file is not None:
        print(f"latdoc lab: CA certificate {server.ca_file}", flush=True)


def serve_forever(
    config: LabConfig = DEFAULT_CONFIG,
    host: str = "127.0.0.1",
    port: int = 8000,
    tls: bool = False,
    http2: bool = False,
    *,
    tls_names: Sequence[str] = (),
    on_ready: Callable[[LabServer], None] = _announce,
    stop: threading.Event | None = None,
) -> None:
    """Serve until ``stop`` is set, Ctrl-C or SIGTERM; ``on_ready`` announces the URL.

    By default it prints the base URL and, with TLS, the CA file path.
    ``tls_names``: more host names or IP addresses the certificate is valid for.
    """
    stop = stop or threading.Event()
    restore = None
    if threading.current_thread() is threading.main_thread():
        restore = signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    try:
        server = LabServer(config, host=host, port=port, tls=tls, http2=http2, tls_names=tls_names)
        with server:
            on_ready(server)
            with contextlib.suppress(KeyboardInterrupt):
                stop.wait()
    finally:
        if restore is not None:
            signal.signal(signal.SIGTERM, restore)
