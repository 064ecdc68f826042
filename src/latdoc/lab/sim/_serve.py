"""Serving one admitted request: the streamed answer or the whole document.

A request first takes its slot (:meth:`Lab.admit`); its first token is due its
reservation and prefill later, and output token ``k`` at ``first + k·decode`` plus
what KV pressure and a stall add (with its model's timing), on an
absolute monotonic schedule (with jitter or batching, each gap is drawn in turn, the
batch's slowdown read from the streams decoding as each event is written). A streamed
event carries ``tokens_per_event`` tokens and is written when its last token is due.
Its slot is released once the last token is out. The ``reset``, ``truncate`` and
``malformed`` faults strike when token ``fault_after_tokens`` is due.

With ``keepalive_comment_ms``, a server-sent-event answer's headers go at once and
a ``: keep-alive`` comment every that many ms while it waits for its slot
(:func:`_admit_with_comments`), as DeepSeek writes them while a request waits to be
scheduled; none once it has its slot, through its reservation and prefill. The API's
opening events (chat's role chunk, Anthropic's ``message_start``) then go with the
first event, as they would with ``headers_after_prefill``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any, Protocol

from starlette.types import Message, Scope, Send

from latdoc.lab.sim._call import Call
from latdoc.lab.sim._config import Fault, LabConfig, LatencyModel, UsageShape
from latdoc.lab.sim._faults import STREAM_FAULTS, ResetConnection
from latdoc.lab.sim._plan import Plan, lab_object, told_timing
from latdoc.lab.sim._writers import ChatWriter, StreamWriter

__all__ = ["KEEPALIVE_COMMENT", "Flight", "Lab", "serve_complete", "serve_stream"]

_RESET_WAIT_S = 1.0
"""How long a reset request waits for its server to notice the dead connection."""

_SSE = b"text/event-stream"
_STREAM_TYPE = {False: _SSE, True: b"application/json"}
"""A streamed answer's content type: server-sent events, or one JSON array."""
KEEPALIVE_COMMENT = b": keep-alive\n\n"
"""The SSE comment written while a request waits for its first token."""


class Flight:
    """One request being served: its task, its connection and how it may end early."""

    __slots__ = ("cancelled", "disconnected", "finished", "scope", "started", "task", "truth")

    def __init__(self, task: asyncio.Task[object], scope: Scope, truth: bool) -> None:
        self.task = task
        self.scope = scope
        self.truth = truth
        self.started = False
        self.finished = False
        self.disconnected = False
        self.cancelled = False

    def cancel(self) -> None:
        if not (self.finished or self.cancelled):
            self.cancelled = True
            self.task.cancel()


class Lab(Protocol):
    """What serving a request needs from the endpoint's shared state."""

    config: LabConfig
    reset_connection: ResetConnection | None

    def next_id(self) -> int: ...

    def jittered(self, latency: LatencyModel, ms: float) -> float: ...

    def event_tokens(self) -> int: ...

    def start_decoding(self, plan: Plan) -> None: ...

    def batch_factor(self, latency: LatencyModel) -> float: ...

    async def admit(self, plan: Plan) -> None: ...

    def prefilled(self, plan: Plan) -> None: ...

    def release(self, plan: Plan) -> None: ...

    def headers(
        self, plan: Plan, start_ns: int | None, content_type: bytes
    ) -> list[tuple[bytes, bytes]]: ...

    def usage(self, plan: Plan) -> dict[str, Any]: ...

    def log_writes(self, flight: Flight, writes_ns: list[int], call: Call) -> None: ...


def _compact(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _strike_point(plan: Plan, config: LabConfig) -> int | None:
    if plan.fault not in STREAM_FAULTS:
        return None
    return min(config.fault_after_tokens, plan.call.total_tokens)


async def _reset(lab: Lab, flight: Flight) -> None:
    """Reset the request's TCP connection, then wait to be cancelled by the disconnect."""
    client = flight.scope.get("client")
    found = False
    if lab.reset_connection is not None and client:
        found = await lab.reset_connection((str(client[0]), int(client[1])))
    if not found:
        raise ConnectionAbortedError("lab fault: reset (connection not found)")
    await asyncio.sleep(_RESET_WAIT_S)


def _body(data: bytes, *, more: bool = True) -> Message:
    return {"type": "http.response.body", "body": data, "more_body": more}


async def _strike(lab: Lab, plan: Plan, flight: Flight, send: Send, writer: StreamWriter) -> bool:
    """Apply a stream fault now; say whether the response is over."""
    if plan.fault is Fault.MALFORMED:
        await send(_body(writer.malformed()))
        return False
    if plan.fault is Fault.OVERLOADED:
        flight.finished = True
        await send(_body(writer.overloaded(), more=False))
        return True
    if plan.fault is Fault.TRUNCATE:
        flight.finished = True
        await send(_body(b"", more=False))
        return True
    await _reset(lab, flight)
    return True


def _event_cuts(plan: Plan, strike_at: int | None) -> frozenset[int]:
    """The tokens an event never reaches past: each starts an event of its own (the
    answer after reasoning, the token after a stall, the one a fault strikes at)."""
    cuts = {plan.call.reasoning_tokens, strike_at, plan.stall_after}
    return frozenset(k for k in cuts if k is not None and 0 < k < plan.call.total_tokens)


async def _admit_with_comments(lab: Lab, plan: Plan, send: Send, every_s: float) -> None:
    """Wait for the request's slot, writing a keep-alive comment every ``every_s``."""
    loop = asyncio.get_running_loop()
    admission = asyncio.ensure_future(lab.admit(plan))
    next_at = loop.time() + every_s
    try:
        while True:
            done, _ = await asyncio.wait({admission}, timeout=max(0.0, next_at - loop.time()))
            if done:
                admission.result()
                return
            await send(_body(KEEPALIVE_COMMENT))
            next_at = max(next_at + every_s, loop.time())
    finally:
        if not admission.done():
            admission.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await admission


async def serve_stream(lab: Lab, plan: Plan, flight: Flight, send: Send) -> None:
    """Stream the answer as server-sent events, one write per event of
    ``tokens_per_event`` output tokens (reasoning tokens first, then the answer's)."""
    stream = _Stream(lab, plan, flight, send)
    start = await stream.open()
    if await stream.write_tokens(start):
        return
    await stream.close()


class _Stream:
    """One streamed answer as it is written: the headers (before the slot where
    keep-alive comments are due while it waits for one, else after it or after the
    prefill), the API's opening events, the tokens at their pace, and the closing events."""

    def __init__(self, lab: Lab, plan: Plan, flight: Flight, send: Send) -> None:
        self.lab, self.plan, self.flight, self.send = lab, plan, flight, send
        self.loop = asyncio.get_running_loop()
        self.content_type = plan.api.media_type or _STREAM_TYPE[plan.call.json_array]
        self.every_s = lab.config.keepalive_comment_ms / 1000 if self.content_type == _SSE else 0.0
        self.head: Message = {"type": "http.response.start", "status": 200}
        self.begun = False
        self.writer: StreamWriter | None = None

    async def open(self) -> float:
        """Wait for a slot (with keep-alive comments after the headers, where they are
        due) and make the writer; the loop's time the request started being served."""
        lab, plan, config = self.lab, self.plan, self.lab.config
        if self.every_s:
            self.head["headers"] = lab.headers(plan, None, self.content_type)
            self.flight.started = True
            await self.send(self.head)
            await _admit_with_comments(lab, plan, self.send, self.every_s)
        else:
            await lab.admit(plan)
        start_ns = time.perf_counter_ns()
        start = self.loop.time()
        call = plan.call
        self.writer = plan.api.writer(call, lab.next_id(), config.stamp_chunks, plan.cached_tokens)
        if not self.every_s:
            self.head["headers"] = lab.headers(plan, start_ns, self.content_type)
        if not self.every_s and not config.headers_after_prefill:
            await self.begin()
        return start

    async def begin(self) -> None:
        """The headers (unless sent already) and the API's opening events."""
        assert self.writer is not None
        self.begun = True
        if not self.flight.started:
            self.flight.started = True
            await self.send(self.head)
        opening = self.writer.opening()
        if opening:
            await self.send(_body(opening))

    async def wait_until(self, target: float) -> None:
        """Sleep until ``target``."""
        delay = target - self.loop.time()
        if delay > 0:
            await asyncio.sleep(delay)

    async def write_tokens(self, start: float) -> bool:
        """Every output token at its time from ``start``, an event at a time, and a stream
        fault where it strikes; whether the fault ended the response."""
        lab, plan, send, loop, writer = self.lab, self.plan, self.send, self.loop, self.writer
        assert writer is not None
        config, latency = lab.config, plan.latency
        first = start + (plan.reserve_ms + plan.prefill_ms) / 1000
        decode_s = latency.decode_ms_per_token / 1000
        paced = latency.jitter_ms > 0 or latency.batch_slowdown > 0
        factor = 1.0
        target = first
        total = plan.call.total_tokens
        strike_at = _strike_point(plan, config)
        cuts = _event_cuts(plan, strike_at)
        opened = last = 0
        writes: list[int] | None = [] if config.write_log is not None else None
        for k in range(total):
            if k > last:
                opened = k
                last = k + lab.event_tokens() - 1
                last = min([last, total - 1, *(c - 1 for c in cuts if c > k)])
                factor = lab.batch_factor(latency)
            elif k == 0:
                last = min([lab.event_tokens() - 1, total - 1, *(c - 1 for c in cuts)])
            if k:
                if paced:
                    gap = lab.jittered(latency, plan.gap_ms(k)) * factor
                    plan.decode_ms += gap
                    target += (gap + plan.stall_before(k)) / 1000
                else:
                    plan.decode_ms += plan.gap_ms(k)
                    extra_ms = plan.kv_extra_ms(k) + plan.stall_extra_ms(k)
                    target = first + k * decode_s + extra_ms / 1000
                stall_s = plan.stall_before(k) / 1000
                if stall_s and target < loop.time() + stall_s:
                    # A lab running late would catch the stall up with the tokens before
                    # it; the pause follows the token before, and the tokens after keep
                    # their pace from its end.
                    late = loop.time() + stall_s - target
                    first += late
                    target += late
            if k in (0, strike_at, last):
                await self.wait_until(target)
            if k == 0:
                lab.prefilled(plan)
                lab.start_decoding(plan)
                factor = lab.batch_factor(latency)
            if k == strike_at:
                if not self.begun:
                    await self.begin()
                if await _strike(lab, plan, self.flight, send, writer):
                    return True
            if k < last:
                continue
            if not self.begun:
                await self.begin()
            piece = writer.tokens(opened, k - opened + 1)
            if piece:  # a token the API does not show (hidden reasoning) is no write
                await send(_body(piece))
                if writes is not None:
                    writes.append(time.perf_counter_ns())
        lab.release(plan)
        if writes is not None:
            lab.log_writes(self.flight, writes, plan.call)
        return strike_at == total and await _strike(lab, plan, self.flight, send, writer)

    async def close(self) -> None:
        """The closing events: the usage, the lab's truth where asked, the timing told."""
        lab, plan, writer = self.lab, self.plan, self.writer
        assert writer is not None
        truth = lab_object(plan) if self.flight.truth else None
        if isinstance(writer, ChatWriter):
            writer.told = told_timing(plan, lab.config.timing_forms, writer.call_id)
            writer.usage_in_choice = lab.config.usage_shape is UsageShape.MOONSHOT
        closing = writer.closing(lab.usage(plan), truth)
        for piece in closing[:-1]:
            await self.send(_body(piece))
        self.flight.finished = True
        await self.send(_body(closing[-1], more=False))


async def serve_complete(lab: Lab, plan: Plan, flight: Flight, send: Send) -> None:
    """Answer with the whole document once its last token is due."""
    await lab.admit(plan)
    loop = asyncio.get_running_loop()
    start_ns = time.perf_counter_ns()
    start = loop.time()
    latency = plan.latency
    call = plan.call
    gaps = call.total_tokens - 1
    if latency.jitter_ms > 0:
        plan.decode_ms = sum(lab.jittered(latency, plan.gap_ms(k)) for k in range(1, gaps + 1))
    else:
        plan.decode_ms = gaps * latency.decode_ms_per_token + plan.kv_extra_ms(gaps)
    first_ms = plan.reserve_ms + plan.prefill_ms
    delay = start + first_ms / 1000 - loop.time()
    if delay > 0:
        await asyncio.sleep(delay)
    lab.prefilled(plan)
    lab.start_decoding(plan)
    plan.decode_ms *= lab.batch_factor(latency)
    stall_ms = plan.stall_extra_ms(gaps)
    delay = start + (first_ms + plan.decode_ms + stall_ms) / 1000 - loop.time()
    if delay > 0:
        await asyncio.sleep(delay)
    lab.release(plan)
    document = plan.api.document(call, lab.next_id(), lab.usage(plan), plan.cached_tokens)
    if flight.truth:
        document["lab"] = lab_object(plan)
    flight.finished = True
    body = json.dumps(document).encode()
    headers = lab.headers(plan, start_ns, b"application/json")
    if plan.fault is Fault.TRUNCATE:
        body = body[: len(body) // 2]
    elif plan.fault is Fault.MALFORMED:
        body = body[:-1]
    if plan.fault is not Fault.TRUNCATE:
        headers.append((b"content-length", b"%d" % len(body)))
    flight.started = True
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    if plan.fault is Fault.RESET:
        flight.finished = False
        await _reset(lab, flight)
        return
    await send({"type": "http.response.body", "body": body, "more_body": False})
