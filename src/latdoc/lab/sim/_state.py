"""The simulated endpoint's shared state, and how it handles one completion request.
:class:`LabState` holds the config, the seeded random streams, ids, the slots with
their background load, the prefix cache and the requests in flight; for each request
it checks the key and headers, plans it at arrival (fault, stall, load), admits it to
a slot, has it served (streamed, whole, faulted, or refused while shutting down) and
reports its headers and usage.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import json
import random
import time
from typing import Any, TextIO
from urllib.parse import parse_qs

from starlette.types import Receive, Scope, Send

from latdoc.lab.sim._cache import PrefixCache
from latdoc.lab.sim._call import ApiError, Call
from latdoc.lab.sim._config import Fault, LabConfig, LatencyModel, TimingForm, UsageShape
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
from latdoc.lab.sim._request import parse_call
from latdoc.lab.sim._serve import Flight, serve_complete, serve_stream
from latdoc.lab.sim._slots import BackgroundLoad, SlotPool
from latdoc.lab.sim.dialects import StandIn

__all__ = ["LabState"]


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


async def _send_json(
    send: Send, status: int, body: bytes, more: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await _send_response(send, status, headers + (more or []), body)


_SHUTTING_DOWN = ApiError(503, "The lab server is shutting down.", type_="server_error")


class LabState:
    """The endpoint's shared state: config, RNGs, ids, slots, cache and requests in flight."""

    def __init__(self, config: LabConfig, reset_connection: ResetConnection | None) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.fault_rng = random.Random(_subseed(config.seed, "faults"))
        self.stall_rng = random.Random(_subseed(config.seed, "stalls"))
        self.event_rng = random.Random(_subseed(config.seed, "events"))
        self.decoding = 0
        """Requests between their first and last token now."""
        self.ids = itertools.count(1)
        self.created = int(time.time())
        self.active: set[Flight] = set()
        self.write_log: TextIO | None = None
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
                day_origin=config.day_origin,
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

    def check_headers(self, api: StandIn, scope: Scope) -> None:
        """The key, and any header or query ``api`` requires; raises :class:`ApiError`."""
        api.check_key(lambda name: _header(scope, name), self.authorized)
        if api.check_query is not None:
            api.check_query(scope["path"], _query(scope))

    def jittered(self, latency: LatencyModel, ms: float) -> float:
        j = latency.jitter_ms
        if j == 0:
            return ms
        return max(0.0, ms + self.rng.uniform(-j, j))

    def next_id(self) -> int:
        return next(self.ids)

    def event_tokens(self) -> int:
        """Output tokens the next streamed event carries (``tokens_per_event``, or a
        seeded draw up to ``tokens_per_event_max``)."""
        low, high = self.config.tokens_per_event, self.config.tokens_per_event_max
        return low if high is None or high == low else self.event_rng.randint(low, high)

    def start_decoding(self, plan: Plan) -> None:
        """The request's first token is due: it counts among the streams decoding."""
        if not plan.decoding:
            plan.decoding = True
            self.decoding += 1

    def batch_factor(self, latency: LatencyModel) -> float:
        """How much slower a token gap starting now is: the streams decoding now and the
        background requests holding slots (:meth:`LatencyModel.batch_factor`)."""
        if latency.batch_slowdown == 0:
            return 1.0
        background = self.pool.background_busy if self.pool is not None else 0
        return latency.batch_factor(self.decoding + background)

    def log_writes(self, flight: Flight, writes_ns: list[int], call: Call) -> None:
        """Append a stream's token writes to ``config.write_log``: one JSON line of the
        request's ``X-Request-ID``, the ``perf_counter_ns`` after each write, and the
        prompt and output tokens the lab counted (what a provider would bill, whether or
        not the response told them)."""
        if self.config.write_log is None:
            return
        if self.write_log is None:
            # Line-buffered: a line is on disk as its stream ends, for a reader meanwhile.
            self.write_log = open(self.config.write_log, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        request_id = _header(flight.scope, b"x-request-id")
        line = {"request_id": None if request_id is None else request_id.decode("latin-1"),
                "writes_ns": writes_ns, "prompt_tokens": call.prompt_tokens,
                "output_tokens": call.total_tokens}  # fmt: skip
        self.write_log.write(json.dumps(line, separators=(",", ":")) + "\n")

    def close(self) -> None:
        self.closing = True
        if self.write_log is not None:
            self.write_log.close()
            self.write_log = None
        if self.background is not None:
            self.background.close()
        for flight in list(self.active):
            flight.cancel()

    def plan(self, api: StandIn, body: bytes, scope: Scope) -> Plan:
        """Validate the request and plan what happens to it at arrival."""
        config = self.config
        model = scope.get("path_params", {}).get("model")
        call = parse_call(body, api, config, model, _query(scope))
        fault = choose_fault(config, _header(scope, FAULT_HEADER), self.fault_rng)
        plan = Plan(call, api, config.latency_for(call.model), fault=fault)
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
        plan.admitted = True
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
        """The request's last token is out: it no longer decodes, and its slot goes to
        the next in line."""
        if plan.decoding:
            plan.decoding = False
            self.decoding -= 1
        if plan.holds_slot and self.pool is not None:
            plan.holds_slot = False
            self.pool.release()

    def headers(
        self, plan: Plan, start_ns: int | None, content_type: bytes
    ) -> list[tuple[bytes, bytes]]:
        """The response headers; ``start_ns`` is the origin of the request's schedule,
        ``None`` when the headers go before it has one (keep-alive comments)."""
        call = plan.call
        headers = [
            (b"content-type", content_type),
            (b"cache-control", b"no-cache"),
            (b"x-lab-prompt-tokens", b"%d" % call.prompt_tokens),
        ]
        if TimingForm.SERVER_TIMING in self.config.timing_forms:
            timing = server_timing(plan, queued=self.pool is not None)
            headers.insert(2, (b"server-timing", timing))
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
        if self.config.stamp_chunks and start_ns is not None:
            headers.append((b"x-lab-start-ns", b"%d" % start_ns))
        if not self.config.keep_alive:
            headers.append((b"connection", b"close"))
        headers.extend(
            (name.lower().encode(), value.encode()) for name, value in self.config.extra_headers
        )
        return headers

    def usage(self, plan: Plan) -> dict[str, Any]:
        call = plan.call
        usage: dict[str, Any] = {
            "prompt_tokens": call.prompt_tokens,
            "completion_tokens": call.total_tokens,
            "total_tokens": call.prompt_tokens + call.total_tokens,
        }
        shape = self.config.usage_shape
        if shape is UsageShape.DEEPSEEK:
            usage["prompt_cache_hit_tokens"] = plan.cached_tokens
            usage["prompt_cache_miss_tokens"] = call.prompt_tokens - plan.cached_tokens
        elif shape is UsageShape.MOONSHOT:
            usage["cached_tokens"] = plan.cached_tokens
        elif self.cache is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": plan.cached_tokens}
        return usage

    def reports_truth(self, scope: Scope) -> bool:
        return self.config.extended or _header(scope, FAULT_HEADER) is not None

    async def handle(self, api: StandIn, scope: Scope, receive: Receive, send: Send) -> None:
        self.received += 1
        body = await _read_body(receive)
        if body is None:
            return
        try:
            if self.closing:
                raise _SHUTTING_DOWN
            self.check_headers(api, scope)
            plan = self.plan(api, body, scope)
        except ApiError as error:
            more = None if api.error_headers is None else api.error_headers(error)
            await _send_json(send, error.status, api.error_body(error), more)
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


def _query(scope: Scope) -> dict[str, list[str]]:
    return parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))


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
