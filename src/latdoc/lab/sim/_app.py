"""A simulated OpenAI-compatible endpoint whose latency follows known parameters.

It speaks OpenAI chat completions (``/v1/chat/completions``) and completions
(``/v1/completions``), OpenAI's Responses API (``/v1/responses``) and Anthropic's
Messages API (``/v1/messages``, with ``x-api-key`` and ``anthropic-version``);
:mod:`latdoc.lab.sim._writers` builds each dialect's events. A model with
reasoning thinks before it answers (:class:`~latdoc.lab.sim.LatencyModel`).

Prefill of ``n`` prompt tokens takes ``a + b·n + c·n²`` ms; output token ``k`` is
written at ``prefill_end + k · decode_ms_per_token`` on an absolute monotonic
schedule, one server-sent event per write, so a client measuring it can be
checked against the truth. Prompt and output lengths use the lab tokenizer
(:mod:`latdoc.lab.sim._tokenizer`); each output chunk is exactly one lab token.
:class:`~latdoc.lab.sim.LabConfig` adds KV-cache pressure, a context
limit, parallel slots with a queue, background load over a simulated day, a
prefix cache, mid-stream stalls and injected faults.

What each response reports, so that tests know the truth:

- ``Server-Timing`` (what is known when headers are sent): ``queue;dur`` (only
  with ``slots``: the time spent waiting for a slot), ``reserve;dur`` (only when
  the request's model charges for its output limit:
  :meth:`~latdoc.lab.sim.LatencyModel.reserve_ms`), ``prefill;dur`` (the prefill
  charged, after cache, KV penalty and jitter), ``tpot;dur`` (the first token gap),
  ``stall;dur=…;desc="after token k"`` (only for a request that will stall) and
  ``load;desc="0.750"`` (only with a load profile: its value at arrival).
- Headers: ``x-lab-prompt-tokens``; with slots ``x-lab-slots-busy`` and
  ``x-lab-queue-ahead`` (at arrival); with a load profile ``x-lab-load``; with the
  prefix cache ``x-lab-cached-tokens``; ``x-lab-fault`` on a faulted response;
  ``x-lab-start-ns`` with ``stamp_chunks``.
- With slots the status and headers are sent when the request gets its slot, so
  time to first byte includes the queue and ``queue;dur`` is exact.
- ``usage.prompt_tokens_details.cached_tokens`` with the prefix cache.
- When any of those knobs is set (``LabConfig.extended``) the last JSON event of a
  stream (the usage chunk, or the finish chunk when usage is not asked for) and a
  non-streamed document carry a top-level ``"lab"`` object, the whole truth once
  the request is done (see :func:`~latdoc.lab.sim._plan.lab_object`; a model
  that charges for its output limit adds ``reserve_ms``)::

      "lab": {"queue_ms": 180.2, "prefill_ms": 100.0, "decode_ms": 80.0,
              "stall_ms": 0.0, "stall_after_token": null, "cached_tokens": 0,
              "kv_prefill_penalty": 1.0, "kv_slow_from_token": null,
              "load": 0.75, "slots_busy": 4, "queue_ahead": 2, "fault": null}

The streaming routes are plain ASGI callables behind starlette's router: the hot
path builds every event from pre-encoded fragments and hands it to the server as
its own ``http.response.body`` message. Importing this module starts nothing.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import random
import time
from collections.abc import Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from latdoc.lab.sim._cache import PrefixCache
from latdoc.lab.sim._config import Fault, LabConfig, LatencyModel
from latdoc.lab.sim._faults import (
    FAULT_HEADER,
    IMMEDIATE_FAULTS,
    Drip,
    ResetConnection,
    choose_fault,
    fault_response,
    timeout_response,
)
from latdoc.lab.sim._plan import Plan, server_timing
from latdoc.lab.sim._request import ApiError, Kind, parse_call
from latdoc.lab.sim._serve import Flight, serve_complete, serve_stream
from latdoc.lab.sim._slots import BackgroundLoad, SlotPool

__all__ = ["create_app", "end_streams", "in_flight", "requests_received"]


def _subseed(seed: int | None, name: str) -> str | None:
    return None if seed is None else f"{seed}:{name}"


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _send_response(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _send_json(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await _send_response(send, status, headers, body)


_UNAUTHORIZED = ApiError(
    401, "Incorrect API key provided.", code="invalid_api_key", type_="invalid_request_error"
)
_SHUTTING_DOWN = ApiError(503, "The lab server is shutting down.", type_="server_error")


class _Lab:
    """The endpoint's shared state: config, RNGs, ids, slots, cache and requests in flight."""

    def __init__(self, config: LabConfig, reset_connection: ResetConnection | None) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.fault_rng = random.Random(_subseed(config.seed, "faults"))
        self.stall_rng = random.Random(_subseed(config.seed, "stalls"))
        self.ids = itertools.count(1)
        self.created = int(time.time())
        self.active: set[Flight] = set()
        self.received = 0
        self.closing = False
        self.expected_auth = (
            None if config.api_key is None else b"Bearer " + config.api_key.encode()
        )
        self.reset_connection = reset_connection
        self.pool = SlotPool(config.slots) if config.slots is not None else None
        self.background: BackgroundLoad | None = None
        if self.pool is not None and config.load_profile:
            self.background = BackgroundLoad(
                self.pool,
                config.load_profile,
                config.day_seconds,
                config.background_request_ms,
                random.Random(_subseed(config.seed, "background")),
            )
        self.cache = (
            PrefixCache(config.prefix_block_tokens, config.prefix_cache_blocks)
            if config.prefix_cache
            else None
        )

    def authorized(self, value: bytes | None) -> bool:
        if self.expected_auth is None:
            return True
        return value is not None and hmac.compare_digest(value, self.expected_auth)

    def check_headers(self, kind: Kind, scope: Scope) -> None:
        """The key (``Authorization: Bearer``; on Anthropic's route also ``x-api-key``)
        and, for Anthropic, the ``anthropic-version`` header; raises :class:`ApiError`."""
        bearer = _header(scope, b"authorization")
        if kind != "anthropic":
            if not self.authorized(bearer):
                raise _UNAUTHORIZED
            return
        key = _header(scope, b"x-api-key")
        if not self.authorized(bearer if key is None else b"Bearer " + key):
            raise ApiError(401, "invalid x-api-key")
        if _header(scope, b"anthropic-version") is None:
            raise ApiError(400, "anthropic-version: header is required")

    def jittered(self, latency: LatencyModel, ms: float) -> float:
        j = latency.jitter_ms
        if j == 0:
            return ms
        return max(0.0, ms + self.rng.uniform(-j, j))

    def next_id(self) -> int:
        return next(self.ids)

    def close(self) -> None:
        self.closing = True
        if self.background is not None:
            self.background.close()
        for flight in list(self.active):
            flight.cancel()

    def plan(self, call_kind: Kind, body: bytes, scope: Scope) -> Plan:
        """Validate the request and plan what happens to it at arrival."""
        config = self.config
        call = parse_call(body, call_kind, config)
        fault = choose_fault(config, _header(scope, FAULT_HEADER), self.fault_rng)
        plan = Plan(call, config.latency_for(call.model), fault=fault)
        if self.pool is not None:
            plan.slots_busy = self.pool.busy
            plan.queue_ahead = len(self.pool.waiting)
        if self.background is not None:
            self.background.start()
            plan.load = self.background.fraction_now()
        after = config.stall_after_token
        if after is not None and config.stall_ms > 0 and call.total_tokens > after:
            rate = config.stall_rate
            if rate >= 1.0 or self.stall_rng.random() < rate:
                plan.stall_after, plan.stall_ms = after, config.stall_ms
        return plan

    async def admit(self, plan: Plan) -> None:
        """Take a slot (waiting in line), then plan the reservation, cache and prefill."""
        if self.pool is not None:
            loop = asyncio.get_running_loop()
            arrived = loop.time()
            waited = await self.pool.acquire()
            plan.holds_slot = True
            plan.queue_ms = (loop.time() - arrived) * 1000 if waited else 0.0
        call, latency = plan.call, plan.latency
        plan.reserve_ms = latency.reserve_ms(call.max_tokens)
        if self.cache is not None and call.prompt is not None:
            plan.blocks = self.cache.block_hashes(call.prompt)
            plan.cached_tokens = self.cache.cached_tokens(call.prompt, plan.blocks)
        planned = latency.prefill_ms(call.prompt_tokens, plan.cached_tokens)
        plan.prefill_ms = self.jittered(latency, planned)

    def prefilled(self, plan: Plan) -> None:
        """The prompt's prefill is done: its blocks join the prefix cache."""
        if self.cache is not None and plan.blocks:
            self.cache.add(plan.blocks)
            plan.blocks = []

    def release(self, plan: Plan) -> None:
        """The request's last token is out: its slot goes to the next in line."""
        if plan.holds_slot and self.pool is not None:
            plan.holds_slot = False
            self.pool.release()

    def headers(self, plan: Plan, start_ns: int, content_type: bytes) -> list[tuple[bytes, bytes]]:
        call = plan.call
        headers = [
            (b"content-type", content_type),
            (b"cache-control", b"no-cache"),
            (b"server-timing", server_timing(plan, queued=self.pool is not None)),
            (b"x-lab-prompt-tokens", b"%d" % call.prompt_tokens),
        ]
        if plan.slots_busy is not None:
            headers.append((b"x-lab-slots-busy", b"%d" % plan.slots_busy))
        if plan.queue_ahead is not None:
            headers.append((b"x-lab-queue-ahead", b"%d" % plan.queue_ahead))
        if plan.load is not None:
            headers.append((b"x-lab-load", b"%.3f" % plan.load))
        if self.cache is not None:
            headers.append((b"x-lab-cached-tokens", b"%d" % plan.cached_tokens))
        if plan.fault is not None:
            headers.append((FAULT_HEADER, str(plan.fault).encode()))
        if self.config.stamp_chunks:
            headers.append((b"x-lab-start-ns", b"%d" % start_ns))
        if not self.config.keep_alive:
            headers.append((b"connection", b"close"))
        return headers

    def usage(self, plan: Plan) -> dict[str, Any]:
        call = plan.call
        usage: dict[str, Any] = {
            "prompt_tokens": call.prompt_tokens,
            "completion_tokens": call.total_tokens,
            "total_tokens": call.prompt_tokens + call.total_tokens,
        }
        if self.cache is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": plan.cached_tokens}
        return usage

    def reports_truth(self, scope: Scope) -> bool:
        return self.config.extended or _header(scope, FAULT_HEADER) is not None

    async def handle(self, kind: Kind, scope: Scope, receive: Receive, send: Send) -> None:
        self.received += 1
        body = await _read_body(receive)
        if body is None:
            return
        try:
            if self.closing:
                raise _SHUTTING_DOWN
            self.check_headers(kind, scope)
            plan = self.plan(kind, body, scope)
        except ApiError as error:
            answer = error.anthropic_body() if kind == "anthropic" else error.body
            await _send_json(send, error.status, answer)
            return
        if plan.fault in IMMEDIATE_FAULTS:
            assert plan.fault is not None
            await _send_response(send, *fault_response(plan.fault, self.config))
            return
        if plan.fault is Fault.DRIP:
            send = Drip(send, self.config.drip_interval_ms / 1000)
        task = asyncio.current_task()
        assert task is not None
        flight = Flight(task, scope, self.reports_truth(scope))
        self.active.add(flight)
        watcher = asyncio.create_task(_watch(receive, flight))
        try:
            if plan.fault is Fault.HANG:
                await asyncio.sleep(self.config.hang_s)
                flight.finished = True
                await _send_response(send, *timeout_response(self.config))
            elif plan.call.stream:
                await serve_stream(self, plan, flight, send)
            else:
                await serve_complete(self, plan, flight, send)
        except asyncio.CancelledError:
            if not flight.cancelled or task.uncancel() > 0:
                raise
            if not flight.disconnected:
                await self.abandon(flight, send)
        finally:
            self.release(plan)
            flight.finished = True
            self.active.discard(flight)
            watcher.cancel()

    async def abandon(self, flight: Flight, send: Send) -> None:
        if flight.started:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        else:
            await _send_json(send, _SHUTTING_DOWN.status, _SHUTTING_DOWN.body)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


async def _watch(receive: Receive, flight: Flight) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    flight.disconnected = True
    flight.cancel()


class _Endpoint:
    """The ASGI callable of one completion route."""

    def __init__(self, lab: _Lab, kind: Kind) -> None:
        self.lab = lab
        self.kind: Kind = kind

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.lab.handle(self.kind, scope, receive, send)


class _LabApp(Starlette):
    """Starlette, with the completion routes' POSTs dispatched ahead of its middleware."""

    def __init__(self, fast: dict[str, _Endpoint], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fast = fast

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            endpoint = self.fast.get(scope["path"])
            if endpoint is not None:
                await endpoint(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def _error_response(error: ApiError, headers: Mapping[str, str] | None = None) -> Response:
    return Response(error.body, error.status, headers=headers, media_type="application/json")


def create_app(config: LabConfig, *, reset_connection: ResetConnection | None = None) -> Starlette:
    """The simulated endpoint as an ASGI app: ``/v1/models``, chat, completions,
    Anthropic messages and responses.

    ``reset_connection`` lets the ``reset`` fault find the request's socket (the lab
    server passes its listener's); without it a reset ends the response abruptly
    by raising into the HTTP server, which closes the connection.
    """
    lab = _Lab(config, reset_connection)

    async def models(request: Request) -> Response:
        auth = request.headers.get("authorization")
        if not lab.authorized(None if auth is None else auth.encode("latin-1")):
            return _error_response(_UNAUTHORIZED)
        models = [
            {"id": model, "object": "model", "created": lab.created, "owned_by": "latdoc-lab"}
            for model in config.models
        ]
        return JSONResponse({"object": "list", "data": models})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        error = ApiError(exc.status_code, exc.detail)
        return _error_response(error, exc.headers)

    fast = {
        "/v1/chat/completions": _Endpoint(lab, "chat"),
        "/v1/completions": _Endpoint(lab, "completions"),
        "/v1/messages": _Endpoint(lab, "anthropic"),
        "/v1/responses": _Endpoint(lab, "responses"),
    }
    app = _LabApp(
        fast,
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            *(Route(path, endpoint, methods=["POST"]) for path, endpoint in fast.items()),
        ],
        exception_handlers={HTTPException: http_error},
    )
    app.state.lab = lab
    return app


def end_streams(app: Starlette) -> None:
    """End every request in flight on ``app`` and refuse new ones (503).

    Streams that already sent their headers end cleanly without ``[DONE]``; the
    background load stops. Call it on the server's event loop, before shutting the
    server down.
    """
    lab = getattr(app.state, "lab", None)
    if isinstance(lab, _Lab):
        lab.close()


def in_flight(app: Starlette) -> int:
    """How many completion requests ``app`` is serving right now."""
    lab = getattr(app.state, "lab", None)
    return len(lab.active) if isinstance(lab, _Lab) else 0


def requests_received(app: Starlette) -> int:
    """How many completion requests ``app`` has received since it started, faulted or not.

    The server's own count, so a client's retries can be checked against it.
    """
    lab = getattr(app.state, "lab", None)
    return lab.received if isinstance(lab, _Lab) else 0
