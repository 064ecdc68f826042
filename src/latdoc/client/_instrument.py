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
import logging
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType, TracebackType
from typing import Any

import httpx

from latdoc.client._timed_pool import TimedPool
from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.probe import TimedBackend
from latdoc.records import RequestTrace, Sample, Step, StepNote
from latdoc.store import INSTRUMENT_KIND, Store, redact_url
from latdoc.store.writer import QueuedWriter

__all__ = ["Instrumentation", "instrument"]

CLOSE_TIMEOUT = 10.0
"""Seconds ``close()`` waits for the store to take what is queued."""
LOG_EVERY = 60.0
"""Seconds between two log lines about the same reason for not recording."""

TraceHook = Callable[[RequestTrace], None]

_log = logging.getLogger("latdoc.instrument")


class Losses:
    """Requests latdoc failed to record, by reason; safe to add to from any thread.

    The first failure of each reason is logged at once as a warning on the
    ``latdoc.instrument`` logger, later ones at most every :data:`LOG_EVERY` seconds
    with the count since, so a broken store cannot flood the application's log.
    """

    def __init__(self, what: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        """How the requests are said to be lost: ``not recorded``."""
        self._clock = clock
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._unlogged: dict[str, int] = {}
        self._logged_at: dict[str, float] = {}
        self.changed = False

    def add(self, count: int, reason: str) -> None:
        with self._lock:
            self._counts[reason] = self._counts.get(reason, 0) + count
            self._unlogged[reason] = self._unlogged.get(reason, 0) + count
            self.changed = True
            now = self._clock()
            last = self._logged_at.get(reason)
            if last is not None and now - last < LOG_EVERY:
                return
            self._logged_at[reason] = now
            told = self._unlogged.pop(reason)
        with contextlib.suppress(Exception):
            _log.warning(
                "latdoc: %d request%s %s: %s", told, "" if told == 1 else "s", self.what, reason
            )

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def document(self) -> dict[str, Any]:
        """What the run's ``meta`` keeps: ``{"requests": N, "what": "not recorded",
        "reasons": {reason: n}}``."""
        with self._lock:
            self.changed = False
            total = sum(self._counts.values())
            return {"requests": total, "what": self.what, "reasons": dict(self._counts)}

    def notes(self) -> list[StepNote]:
        with self._lock:
            counts = sorted(self._counts.items(), key=lambda kv: -kv[1])
        return [
            StepNote(Step.TRAFFIC, f"{n} request{'' if n == 1 else 's'} {self.what}: {why}")
            for why, n in counts
        ]


class Instrumentation:
    """The attachment made by :func:`instrument`: where traces go, and how to stop.

    Nothing latdoc does reaches the application: each finished request goes to a
    bounded queue that a thread of latdoc's writes to the store (a slow or locked
    store adds no time to a request), and a step that fails (the store, an
    OpenTelemetry hook, the watch of a response) costs that request's record, which
    is counted in ``not_recorded`` with its reason, logged at a bounded rate, and
    kept in the run (``latdoc runs``, the diagnosis's notes).

    ``close()`` writes what is queued (waiting at most :data:`CLOSE_TIMEOUT`
    seconds) and marks the run ``recorded``; the client keeps working, and its later
    requests are no longer kept. Closing the store closes the attachment first, and
    so does the interpreter's exit.
    """

    def __init__(self, store: Store, run_id: str, owns_store: bool) -> None:
        self.store = store
        self.run_id = run_id
        self.requests = 0
        self.losses = Losses("not recorded")
        self.unreported = Losses("not reported to OpenTelemetry")
        """Requests recorded whose OpenTelemetry span or metrics a hook failed to report."""
        self._owns_store = owns_store
        self._in_flight = 0
        self._closed = False
        self._hooks: list[TraceHook] = []
        self._amend: Callable[[RequestTrace], RequestTrace] | None = None
        self._notes: list[StepNote] = []
        self._writer: QueuedWriter | None = None
        if store.path != ":memory:":
            # A store in memory lives on its own connection only: it is written inline.
            self._writer = QueuedWriter(
                store.sibling,
                run_id,
                self.losses.add,
                close_connection=_close_store,
                after_write=self._keep_losses,
            )
        store.on_close(self._close_quietly)
        atexit.register(self._close_quietly)

    @property
    def not_recorded(self) -> int:
        """Requests latdoc saw finish but failed to record (see :attr:`losses`)."""
        return self.losses.total

    def amend_with(self, amend: Callable[[RequestTrace], RequestTrace]) -> None:
        """Keep ``amend(trace)`` of each finished request instead of the trace: what the
        caller measured of the request beside the pool (a gateway's own time). An amend
        that raises costs that request's record, as any failed step does."""
        self._amend = amend

    def note(self, note: StepNote) -> None:
        """Keep ``note`` with the run when it closes, before the counts of what was lost."""
        self._notes.append(note)

    def flush(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Wait, at most ``timeout`` seconds, until every finished request is written."""
        if self._writer is not None:
            self._writer.flush(timeout)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self._close_quietly)
        self.store.forget_on_close(self._close_quietly)
        try:
            if self._writer is not None:
                self._writer.close(CLOSE_TIMEOUT)
            self._keep_losses(self.store)
            notes = [*self._notes, *self.losses.notes(), *self.unreported.notes()]
            self.store.finish_run(self.run_id, status="recorded", diagnosis=None, notes=notes)
        except Exception as exc:
            # The run stays as it was; the next open of the store marks it interrupted.
            with contextlib.suppress(Exception):
                _log.warning("latdoc: the recording could not be closed: %s", _first_line(exc))
        finally:
            if self._owns_store:
                with contextlib.suppress(Exception):
                    self.store.close()

    def _close_quietly(self) -> None:
        # The store closing, or the interpreter exiting.
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

    # -- called by the pool, on the application's request path; never raises ------

    def request_started(self) -> int:
        """Count a request in flight; return how many are (this one included)."""
        self._in_flight += 1
        return self._in_flight

    def request_finished(self, trace: RequestTrace, concurrency: int) -> None:
        """Keep a finished request, sent while ``concurrency`` were in flight."""
        self._in_flight -= 1
        if self._closed:
            return
        try:
            if self._amend is not None:
                trace = self._amend(trace)
            sample = Sample(Step.TRAFFIC, trace, None, concurrency, index=self.requests)
            self.requests += 1
            for hook in self._hooks:
                self._run_hook(hook, trace)
            if self._writer is not None:
                self._writer.put(sample)
            else:
                self.store.add_samples(self.run_id, (sample,))
        except Exception as exc:
            self.losses.add(1, _first_line(exc))

    def request_lost(self, exc: Exception, *, finished: bool) -> None:
        """Watching a request failed: it is counted, not recorded, and no longer in flight."""
        if not finished:
            self._in_flight -= 1
        if not self._closed:
            self.losses.add(1, f"latdoc failed to watch it: {_first_line(exc)}")

    def _run_hook(self, hook: TraceHook, trace: RequestTrace) -> None:
        try:
            hook(trace)
        except Exception as exc:
            # The request is still recorded in the store; only its span or metric is lost.
            self.unreported.add(1, _first_line(exc))

    def _keep_losses(self, store: Any) -> None:
        """Keep the counts of what was lost in the run's meta, when they changed."""
        values = {
            key: losses.document()
            for key, losses in (("not_recorded", self.losses), ("not_reported", self.unreported))
            if losses.changed
        }
        if values:
            store.update_meta(self.run_id, values)


def _close_store(store: Any) -> None:
    store.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:160]


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
                Message(
                    "instrument() times asynchronous clients only; {client} is "
                    "synchronous: use httpx.AsyncClient or openai.AsyncOpenAI",
                    client=type(client).__name__,
                )
            )
    raise UsageError(
        Message(
            "instrument() takes an httpx.AsyncClient or an openai.AsyncOpenAI, not {client}",
            client=type(client).__name__,
        )
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
            raise UsageError(N_("this client is instrumented already"))
        if pool is None or not hasattr(pool, "_network_backend"):
            raise UsageError(
                Message(
                    "instrument() needs httpx's own transport; this client uses {transport}",
                    transport=type(transport).__name__,
                )
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
            kind=INSTRUMENT_KIND,
        )
    info = store.run_info(run)
    if info.kind != INSTRUMENT_KIND:
        raise UsageError(
            Message(
                "run {run_id} is a {kind} run; instrument adds to its own runs",
                run_id=info.run_id,
                kind=info.kind,
            )
        )
    return info.run_id
