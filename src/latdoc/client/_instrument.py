"""Time an application's own requests with the probe's definitions: :func:`instrument`.

The attachment sits one level below httpx, at the connection pool its transport
owns (httpcore's, or httpcore2's under ``httpx2``, which the ``openai`` SDK uses):

- the pool gets the probe's timed network backend, so DNS, TCP connect, TLS and
  every socket read of new connections are stamped exactly as ``latdoc probe``
  stamps them;
- each request passing through the pool is bound to a fresh probe ``Recorder``
  (httpcore's ``trace`` extension marks the send, the peer's ACK and the first
  byte), and its response body is watched as it flows to the application: every
  piece is handed on unchanged and at once, and a copy is fed to the probe's SSE
  decoder for the first token, the chunks and the usage;
- when the body ends, fails or is closed, the request is frozen into the same
  :class:`~latdoc.records.RequestTrace` the probe makes and kept in the store as
  a sample of step ``traffic``.

Errors the application sees stay the ones its own HTTP library would have raised:
the timed backend's exceptions are translated back to the pool library's classes,
which httpx then maps as it always does.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
from collections.abc import Callable
from types import ModuleType, TracebackType
from typing import Any

import httpx

from latdoc.client._timed_pool import TimedPool
from latdoc.errors import UsageError
from latdoc.probe import TimedBackend
from latdoc.records import RequestTrace, Sample, Step
from latdoc.store import Store, redact_url

__all__ = ["Instrumentation", "instrument"]

_FLUSH_EVERY = 64
"""Finished requests written in one commit while others are still in flight."""

TraceHook = Callable[[RequestTrace], None]


class Instrumentation:
    """The attachment made by :func:`instrument`: where traces go, and how to stop.

    ``close()`` writes what is pending and marks the run ``recorded``; the client keeps
    working, and its later requests are no longer kept. Closing the store closes the
    attachment first, and so does the interpreter's exit.
    """

    def __init__(self, store: Store, run_id: str, owns_store: bool) -> None:
        self.store = store
        self.run_id = run_id
        self.requests = 0
        self._owns_store = owns_store
        self._pending: list[Sample] = []
        self._in_flight = 0
        self._closed = False
        self._hooks: list[TraceHook] = []
        store.on_close(self._close_quietly)
        atexit.register(self._close_quietly)

    def flush(self) -> None:
        """Write every finished request not yet written."""
        pending, self._pending = self._pending, []
        if pending:
            self.store.add_samples(self.run_id, pending)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self._close_quietly)
        self.store.forget_on_close(self._close_quietly)
        self.flush()
        self.store.finish_run(self.run_id, status="recorded", diagnosis=None)
        if self._owns_store:
            self.store.close()

    def _close_quietly(self) -> None:
        # The store closing, or the interpreter exiting: a recording that cannot be
        # written last is lost, and the application is not told.
        with contextlib.suppress(Exception):
            self.close()

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def request_started(self) -> int:
        """Count a request in flight; return how many are (this one included)."""
        self._in_flight += 1
        return self._in_flight

    def request_finished(self, trace: RequestTrace, concurrency: int) -> None:
        """Keep a finished request, sent while ``concurrency`` were in flight."""
        self._in_flight -= 1
        if self._closed:
            return
        self._pending.append(Sample(Step.TRAFFIC, trace, None, concurrency, index=self.requests))
        self.requests += 1
        for hook in self._hooks:
            hook(trace)
        # Writing when the application goes idle keeps the store current without a
        # disk sync per request under load.
        if self._in_flight == 0 or len(self._pending) >= _FLUSH_EVERY:
            self.flush()


def instrument(
    client: Any,
    *,
    store: Store | None = None,
    run: str | None = None,
    otel: bool = False,
    kernel_stamps: bool = False,
    ask_usage: bool = False,
) -> Instrumentation:
    """Time every request ``client`` makes from now on, and keep each as a trace.

    ``client`` is an ``httpx.AsyncClient`` (or ``httpx2``'s) or an
    ``openai.AsyncOpenAI``. ``store`` defaults to the user's store; ``run`` is an
    existing ``instrument`` run to add to, else a new one is started. With
    ``otel=True`` every request is also reported as an OpenTelemetry GenAI span and
    metrics through the application's own OpenTelemetry providers.

    ``kernel_stamps=True`` stamps arrivals with the kernel's receive time, read by a
    thread of latdoc's, rather than when the application's event loop reads them:
    exact when the loop runs late, at about 1 ms more CPU a request
    (``bench/instrument_overhead.py``), so it is off by default in an application.

    Every request's prompt size is kept from its body: its characters, and the tokens
    they are estimated to hold, for the length curve when the server reports no usage.
    ``ask_usage=True`` adds the field that asks a stream for its usage where the
    request's dialect has one and the request did not set it (chat completions'
    ``stream_options: {"include_usage": true}``), so the server's own token counts are
    kept: the stream then ends with one more chunk, which has usage and no choices. A
    server that refuses the field gets the request again as the application wrote it,
    and is not asked again.
    """
    pools = _pools_of(_http_client(client))
    otel_hook = None
    if otel:
        from latdoc.client._otel import GenAiTelemetry

        otel_hook = GenAiTelemetry()
    owns = store is None
    db = Store(None) if store is None else store
    try:
        run_id = _run_for(db, run, _base_url(client))
    except BaseException:
        if owns:
            db.close()
        raise
    handle = Instrumentation(db, run_id, owns)
    if otel_hook is not None:
        handle._hooks.append(otel_hook.record)
    for owner, pool in pools:
        pool._network_backend = TimedBackend(kernel_stamps=kernel_stamps)
        owner._pool = TimedPool(pool, handle, ask_usage=ask_usage)
    return handle


def _http_client(client: Any) -> Any:
    inner = getattr(client, "_client", None)
    for candidate in (client, inner):
        if _is_client(candidate, "AsyncClient"):
            return candidate
    for candidate in (client, inner):
        if _is_client(candidate, "Client"):
            raise UsageError(
                f"instrument() times asynchronous clients only; {type(client).__name__} is "
                "synchronous: use httpx.AsyncClient or openai.AsyncOpenAI"
            )
    raise UsageError(
        f"instrument() takes an httpx.AsyncClient or an openai.AsyncOpenAI, "
        f"not {type(client).__name__}"
    )


def _is_client(obj: Any, name: str) -> bool:
    for lib in _http_libraries():
        cls = getattr(lib, name, None)
        if isinstance(cls, type) and isinstance(obj, cls):
            return True
    return False


def _http_libraries() -> list[ModuleType]:
    """httpx, and ``httpx2`` (its fork the openai SDK ships with) when it is loaded."""
    libs: list[ModuleType] = [httpx]
    fork = sys.modules.get("httpx2")
    if fork is not None:
        libs.append(fork)
    return libs


def _pools_of(http: Any) -> list[tuple[Any, Any]]:
    transports = [http._transport, *(t for t in http._mounts.values() if t is not None)]
    found = []
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if isinstance(pool, TimedPool):
            raise UsageError("this client is instrumented already")
        if pool is None or not hasattr(pool, "_network_backend"):
            raise UsageError(
                f"instrument() needs httpx's own transport; this client uses "
                f"{type(transport).__name__}"
            )
        found.append((transport, pool))
    return found


def _base_url(client: Any) -> str:
    return redact_url(str(getattr(client, "base_url", "") or ""))


def _run_for(store: Store, run: str | None, endpoint: str) -> str:
    if run is None:
        return store.new_run(
            endpoint=endpoint,
            model="(application traffic)",
            scenario="chat",
            meta={},
            kind="instrument",
        )
    info = store.run_info(run)
    if info.kind != "instrument":
        raise UsageError(f"run {info.run_id} is a {info.kind} run; instrument adds to its own runs")
    return info.run_id
