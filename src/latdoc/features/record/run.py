"""``latdoc record``: a local gateway in front of the provider that keeps every call it
passes on as a run (:func:`record_traffic`), until ``--max-requests``, ``--duration``
or Ctrl-C.

The run is an ``instrument`` run (``Step.TRAFFIC`` samples, kind ``instrument``), so
``diagnose --from-run``, ``report``, ``serve``, ``export`` and ``compare`` read it as
they read an instrumented application's. Its ``meta["gateway"]`` keeps the upstream,
the listening address, the application's connections and requests, and the gateway's
own time per piece of body (p50, p99, most).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace

import httpx

from latdoc.client import instrument
from latdoc.errors import UsageError
from latdoc.features.record.analysis import Recorded, relay_figures
from latdoc.features.record.gateway import RELAY, AppConnections, Gateway, Upstream
from latdoc.features.record.render import gateway_messages
from latdoc.i18n import Message
from latdoc.pipeline import http_address, listen_on
from latdoc.probe import run_sending
from latdoc.records import RequestTrace, Step, StepNote
from latdoc.store import INSTRUMENT_KIND, Store, redact_url

__all__ = ["RecordPlan", "Recorded", "record_traffic"]

KEEPALIVE_EXPIRY_S = 30.0
"""How long an idle connection to the upstream is kept for the next call."""
KEEPALIVE_CONNECTIONS = 256
"""Idle connections to the upstream kept at most."""
CONNECT_TIMEOUT_S = 30.0
"""The only time limit the gateway sets: the application keeps its own for the rest."""
GRACE_S = 5.0
"""How long calls in flight are given to end once the recording is asked to stop."""


@dataclass(frozen=True)
class RecordPlan:
    upstream: Upstream
    host: str = "127.0.0.1"
    port: int = 8787
    name: str | None = None
    max_requests: int | None = None
    duration_s: float | None = None
    token: str | None = None
    db: str | None = None
    cacert: str | None = None
    """CA certificates to verify the upstream with, beside the system's."""


def record_traffic(
    plan: RecordPlan,
    *,
    ready: Callable[[str], None] | None = None,
    on_trace: Callable[[RequestTrace], None] | None = None,
) -> Recorded:
    """Listen on ``plan.host:plan.port`` and pass every request on to the upstream,
    keeping each as a trace, until the plan's limits or Ctrl-C (SIGTERM too). ``ready``
    is told the gateway's base URL once it listens; ``on_trace`` each kept trace."""
    import uvicorn

    verify = _verify(plan.cacert)
    sock = listen_on(plan.host, plan.port, backlog=1024)
    address = http_address(plan.host, sock.getsockname()[1]) + plan.upstream.prefix
    try:
        store = Store(plan.db)
    except BaseException:
        sock.close()
        raise
    connections = AppConnections()
    relays: list[int] = []
    setups: list[float] = []
    finished = reused = 0
    try:
        run_id = store.new_run(
            endpoint=redact_url(plan.upstream.base),
            model="(application traffic)",
            scenario="chat",
            meta={"name": plan.name,
                  "gateway": {"upstream": plan.upstream.base, "listen": address}},
            kind=INSTRUMENT_KIND,
        )  # fmt: skip
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S),
            limits=httpx.Limits(
                max_connections=None,
                max_keepalive_connections=KEEPALIVE_CONNECTIONS,
                keepalive_expiry=KEEPALIVE_EXPIRY_S,
            ),
            follow_redirects=False,
            trust_env=False,
            verify=verify,
        )
        handle = instrument(client, store=store, run=run_id, kernel_stamps=True)
        config = uvicorn.Config(
            Gateway(plan.upstream, client, token=plan.token, connections=connections),
            log_level="critical", access_log=False, lifespan="off",
            timeout_graceful_shutdown=int(GRACE_S), server_header=False, date_header=False,
            proxy_headers=False,
        )  # fmt: skip
        server = uvicorn.Server(config)
        stopped = False  # a limit of the plan ended it (else Ctrl-C or SIGTERM did)

        def stop() -> None:
            nonlocal stopped
            stopped = True
            server.should_exit = True

        def amend(trace: RequestTrace) -> RequestTrace:
            nonlocal finished, reused
            if trace.new_connection is False:
                reused += 1
            elif trace.new_connection and trace.setup_ms is not None:
                setups.append(trace.setup_ms)
            relay = RELAY.get()
            if relay:
                relays.extend(relay)
                trace = replace(trace, relay_us=tuple(relay))
            finished += 1
            if plan.max_requests is not None and finished >= plan.max_requests:
                stop()
            if on_trace is not None:
                on_trace(trace)
            return trace

        handle.amend_with(amend)

        async def main() -> None:
            loop = asyncio.get_running_loop()
            timer = None
            if plan.duration_s is not None:
                timer = loop.call_later(plan.duration_s, stop)
            # The socket listens already: calls that come before uvicorn accepts wait
            # in its backlog, so the address may be told at once.
            if ready is not None:
                ready(address)
            try:
                await server.serve(sockets=[sock])
            finally:
                if timer is not None:
                    timer.cancel()
                await client.aclose()

        # uvicorn takes Ctrl-C (and SIGTERM), lets the calls in flight end, and raises
        # the signal again once it has stopped: the recording then closes as it would.
        with contextlib.suppress(KeyboardInterrupt):
            run_sending(main())
        interrupted = not stopped
        figures = relay_figures(relays)
        recorded = Recorded(
            run_id=run_id,
            requests=connections.requests,
            kept=handle.requests,
            not_recorded=handle.not_recorded,
            app_connections=connections.opened,
            upstream_reused=reused,
            setup_ms=float(statistics.median(setups)) if setups else None,
            relay=figures,
            interrupted=interrupted,
        )
        for said in gateway_messages(recorded):
            handle.note(StepNote(Step.TRAFFIC, said))
        handle.close()
        meta_gateway = {
            "upstream": plan.upstream.base,
            "listen": address,
            **connections.document(),
        }
        if figures is not None:
            meta_gateway["relay_ms"] = figures.document()
        store.update_meta(run_id, {"gateway": meta_gateway})
        # Records the store could not take are known only once the queue is written.
        return replace(
            recorded,
            kept=handle.requests - handle.not_recorded,
            not_recorded=handle.not_recorded,
        )
    finally:
        with contextlib.suppress(Exception):
            sock.close()
        store.close()


def _verify(cacert: str | None) -> ssl.SSLContext | bool:
    if cacert is None:
        return True
    context = ssl.create_default_context()
    try:
        context.load_verify_locations(cafile=cacert)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(
            Message("--cacert {path}: {why}", path=cacert, why=getattr(exc, "strerror", None)
                    or str(exc))
        ) from None  # fmt: skip
    return context
