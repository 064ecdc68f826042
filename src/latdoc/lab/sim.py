"""A simulated OpenAI-compatible endpoint whose latency follows known parameters.

Prefill of ``n`` prompt tokens takes ``a + b·n + c·n²`` ms; output token ``k`` is
written at ``prefill_end + k · decode_ms_per_token`` on an absolute monotonic
schedule, one server-sent event per write, so a client measuring it can be
checked against the truth. Prompt and output lengths use the lab tokenizer
(:mod:`latdoc.lab.tokenizer`); each output chunk is exactly one lab token.

The streaming routes are plain ASGI callables behind starlette's router: the hot
path builds every event from pre-encoded fragments and hands it to the server as
its own ``http.response.body`` message. Importing this module starts nothing.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import json
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from latdoc.lab.tokenizer import chat_prompt_tokens, count_tokens

__all__ = [
    "OUTPUT_WORDS",
    "LabConfig",
    "LatencyModel",
    "create_app",
    "end_streams",
    "in_flight",
    "output_text",
    "output_token",
]

OUTPUT_WORDS = (
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
)
"""The deterministic word cycle of the simulated output."""

Kind = Literal["chat", "completions"]


def output_token(k: int) -> str:
    """Output token ``k`` (from 0) of every simulated answer: a space and a word."""
    return " " + OUTPUT_WORDS[k % len(OUTPUT_WORDS)]


def output_text(output_tokens: int) -> str:
    """The whole simulated answer of ``output_tokens`` tokens."""
    return "".join(output_token(k) for k in range(output_tokens))


@dataclass(frozen=True)
class LatencyModel:
    """The simulated server's timing, in milliseconds.

    Prefill of ``n`` prompt tokens takes ``prefill_base_ms + prefill_ms_per_token·n
    + prefill_ms_per_token2·n²``; each later output token follows the previous one
    by ``decode_ms_per_token``. With ``jitter_ms`` > 0, a uniform draw from
    ``[-jitter_ms, +jitter_ms]`` is added to the prefill and to every token gap, each
    clipped at 0.
    """

    prefill_base_ms: float = 20.0
    prefill_ms_per_token: float = 0.05
    prefill_ms_per_token2: float = 0.0
    decode_ms_per_token: float = 10.0
    jitter_ms: float = 0.0

    def __post_init__(self) -> None:
        for name in (
            "prefill_base_ms",
            "prefill_ms_per_token",
            "prefill_ms_per_token2",
            "decode_ms_per_token",
            "jitter_ms",
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")

    def prefill_ms(self, prompt_tokens: int) -> float:
        """Planned prefill time (time to first token) for ``prompt_tokens``, no jitter."""
        n = prompt_tokens
        return (
            self.prefill_base_ms
            + self.prefill_ms_per_token * n
            + self.prefill_ms_per_token2 * n * n
        )

    def total_ms(self, prompt_tokens: int, output_tokens: int) -> float:
        """Planned time from request to the last output token, no jitter."""
        return self.prefill_ms(prompt_tokens) + max(output_tokens - 1, 0) * self.decode_ms_per_token


@dataclass(frozen=True)
class LabConfig:
    """What the simulated endpoint serves and how it behaves.

    - ``model``: the only model id served; any other is a 404.
    - ``default_max_tokens``: output length when a request names none.
    - ``headers_after_prefill``: send the status and headers only with the first
      token, instead of at once (as vLLM does).
    - ``reject_stream_options``: answer 400 to requests with ``stream_options``,
      like servers that do not know it.
    - ``stamp_chunks``: every streamed chunk carries ``"lab_t_ns"``, the server's
      ``time.perf_counter_ns()`` when it wrote the chunk, and responses carry
      ``x-lab-start-ns``, the origin of the request's schedule (token ``k`` is due at
      origin + prefill + ``k``·decode). Linux's ``CLOCK_MONOTONIC`` is shared by
      every process, so a client can compare these with its own clock.
    - ``api_key``: when set, requests need ``Authorization: Bearer <api_key>``.
    - ``seed``: seeds the jitter.
    """

    model: str = "lab-sim"
    latency: LatencyModel = field(default_factory=LatencyModel)
    default_max_tokens: int = 32
    headers_after_prefill: bool = False
    reject_stream_options: bool = False
    stamp_chunks: bool = False
    api_key: str | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model must be a non-empty string")
        if self.default_max_tokens < 1:
            raise ValueError(f"default_max_tokens must be >= 1, got {self.default_max_tokens}")


class ApiError(Exception):
    """A request the endpoint refuses, with its OpenAI-style error body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type_: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = json.dumps(
            {"error": {"message": message, "type": type_, "param": param, "code": code}}
        ).encode()


@dataclass(frozen=True, slots=True)
class Call:
    """A validated completion request, reduced to what drives the simulation."""

    kind: Kind
    prompt_tokens: int
    output_tokens: int
    stream: bool
    include_usage: bool


def parse_call(body: bytes, kind: Kind, config: LabConfig) -> Call:
    """Validate a request body like an OpenAI server would; raise :class:`ApiError`."""
    try:
        data = json.loads(body)
    except ValueError:
        raise ApiError(400, "We could not parse the JSON body of your request.") from None
    if not isinstance(data, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    model = data.get("model")
    if model is None:
        raise ApiError(404, "You must provide a model parameter.", code="model_not_found")
    if model != config.model:
        raise ApiError(
            404,
            f"The model `{model}` does not exist or you do not have access to it.",
            code="model_not_found",
            param="model",
        )
    if config.reject_stream_options and "stream_options" in data:
        raise ApiError(
            400, "Unrecognized request argument supplied: stream_options", param="stream_options"
        )
    prompt_tokens = _chat_prompt(data) if kind == "chat" else _completion_prompt(data)
    stream = data.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise ApiError(400, "'stream' must be a boolean.", param="stream")
    options = data.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    return Call(kind, prompt_tokens, _max_tokens(data, config), bool(stream), include_usage)


def _chat_prompt(data: dict[str, object]) -> int:
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "'messages' must be a non-empty array.", param="messages")
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        raise ApiError(400, "Each message must be an object with a 'role'.", param="messages")
    try:
        return chat_prompt_tokens(messages)
    except TypeError as exc:
        raise ApiError(400, f"Invalid message: {exc}.", param="messages") from None


def _completion_prompt(data: dict[str, object]) -> int:
    prompt = data.get("prompt")
    if isinstance(prompt, str):
        return count_tokens(prompt)
    if isinstance(prompt, list) and prompt:
        if all(isinstance(p, str) for p in prompt):
            return sum(count_tokens(p) for p in prompt)
        if all(isinstance(p, int) and not isinstance(p, bool) for p in prompt):
            return len(prompt)
    raise ApiError(
        400, "'prompt' must be a string, an array of strings or of token ids.", param="prompt"
    )


def _max_tokens(data: dict[str, object], config: LabConfig) -> int:
    for name in ("max_completion_tokens", "max_tokens"):
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ApiError(400, f"'{name}' must be an integer >= 1.", param=name)
        return value
    return config.default_max_tokens


@dataclass(frozen=True)
class _Fragments:
    """Pre-encoded JSON pieces of one dialect's stream chunks (after ``"choices":``)."""

    role: bytes | None
    tokens: tuple[bytes, ...]
    finish: bytes


def _token_json(k: int) -> bytes:
    return json.dumps(output_token(k)).encode()


_CHAT = _Fragments(
    role=b'[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]',
    tokens=tuple(
        b'[{"index":0,"delta":{"content":%s},"finish_reason":null}]' % _token_json(k)
        for k in range(len(OUTPUT_WORDS))
    ),
    finish=b'[{"index":0,"delta":{},"finish_reason":"length"}]',
)
_COMPLETIONS = _Fragments(
    role=None,
    tokens=tuple(
        b'[{"index":0,"text":%s,"logprobs":null,"finish_reason":null}]' % _token_json(k)
        for k in range(len(OUTPUT_WORDS))
    ),
    finish=b'[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]',
)
_DONE = b"data: [DONE]\n\n"


class _Events:
    """Builds one request's SSE events; stamps them at build time when asked."""

    __slots__ = ("head", "stamp")

    def __init__(self, call_id: str, obj: str, created: int, model: str, stamp: bool) -> None:
        self.head = b'data: {"id":"%s","object":"%s","created":%d,"model":%s,"choices":' % (
            call_id.encode(),
            obj.encode(),
            created,
            json.dumps(model).encode(),
        )
        self.stamp = stamp

    def message(self, choices: bytes) -> Message:
        tail = b',"lab_t_ns":%d}\n\n' % time.perf_counter_ns() if self.stamp else b"}\n\n"
        return {"type": "http.response.body", "body": self.head + choices + tail, "more_body": True}


def _usage(call: Call) -> dict[str, int]:
    return {
        "prompt_tokens": call.prompt_tokens,
        "completion_tokens": call.output_tokens,
        "total_tokens": call.prompt_tokens + call.output_tokens,
    }


class _Flight:
    """One request being served: its task and how it may end early."""

    __slots__ = ("cancelled", "disconnected", "finished", "started", "task")

    def __init__(self, task: asyncio.Task[object]) -> None:
        self.task = task
        self.started = False
        self.finished = False
        self.disconnected = False
        self.cancelled = False

    def cancel(self) -> None:
        if not (self.finished or self.cancelled):
            self.cancelled = True
            self.task.cancel()


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _send_json(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


_UNAUTHORIZED = ApiError(
    401, "Incorrect API key provided.", code="invalid_api_key", type_="invalid_request_error"
)
_SHUTTING_DOWN = ApiError(503, "The lab server is shutting down.", type_="server_error")


class _Lab:
    """The endpoint's shared state: config, jitter RNG, ids and requests in flight."""

    def __init__(self, config: LabConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.ids = itertools.count(1)
        self.created = int(time.time())
        self.active: set[_Flight] = set()
        self.closing = False
        self.expected_auth = (
            None if config.api_key is None else b"Bearer " + config.api_key.encode()
        )

    def authorized(self, value: bytes | None) -> bool:
        if self.expected_auth is None:
            return True
        return value is not None and hmac.compare_digest(value, self.expected_auth)

    def jittered(self, ms: float) -> float:
        j = self.config.latency.jitter_ms
        if j == 0:
            return ms
        return max(0.0, ms + self.rng.uniform(-j, j))

    def close(self) -> None:
        self.closing = True
        for flight in list(self.active):
            flight.cancel()

    def headers(
        self, call: Call, prefill_ms: float, start_ns: int, content_type: bytes
    ) -> list[tuple[bytes, bytes]]:
        timing = b"prefill;dur=%.3f, tpot;dur=%.3f" % (
            prefill_ms,
            self.config.latency.decode_ms_per_token,
        )
        headers = [
            (b"content-type", content_type),
            (b"cache-control", b"no-cache"),
            (b"server-timing", timing),
            (b"x-lab-prompt-tokens", b"%d" % call.prompt_tokens),
        ]
        if self.config.stamp_chunks:
            headers.append((b"x-lab-start-ns", b"%d" % start_ns))
        return headers

    async def handle(self, kind: Kind, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _read_body(receive)
        if body is None:
            return
        try:
            if self.closing:
                raise _SHUTTING_DOWN
            if not self.authorized(_header(scope, b"authorization")):
                raise _UNAUTHORIZED
            call = parse_call(body, kind, self.config)
        except ApiError as error:
            await _send_json(send, error.status, error.body)
            return
        task = asyncio.current_task()
        assert task is not None
        flight = _Flight(task)
        self.active.add(flight)
        watcher = asyncio.create_task(_watch(receive, flight))
        try:
            if call.stream:
                await self.stream(call, flight, send)
            else:
                await self.complete(call, flight, send)
        except asyncio.CancelledError:
            if not flight.cancelled or task.uncancel() > 0:
                raise
            if not flight.disconnected:
                await self.abandon(flight, send)
        finally:
            flight.finished = True
            self.active.discard(flight)
            watcher.cancel()

    async def abandon(self, flight: _Flight, send: Send) -> None:
        if flight.started:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        else:
            await _send_json(send, _SHUTTING_DOWN.status, _SHUTTING_DOWN.body)

    async def stream(self, call: Call, flight: _Flight, send: Send) -> None:
        loop = asyncio.get_running_loop()
        start_ns = time.perf_counter_ns()
        start = loop.time()
        latency = self.config.latency
        prefill_ms = self.jittered(latency.prefill_ms(call.prompt_tokens))
        chat = call.kind == "chat"
        fragments = _CHAT if chat else _COMPLETIONS
        events = _Events(
            f"{'chatcmpl' if chat else 'cmpl'}-lab{next(self.ids)}",
            "chat.completion.chunk" if chat else "text_completion",
            int(time.time()),
            self.config.model,
            self.config.stamp_chunks,
        )
        head: Message = {
            "type": "http.response.start",
            "status": 200,
            "headers": self.headers(call, prefill_ms, start_ns, b"text/event-stream"),
        }
        if not self.config.headers_after_prefill:
            flight.started = True
            await send(head)
            if fragments.role is not None:
                await send(events.message(fragments.role))
        first = start + prefill_ms / 1000
        decode_s = latency.decode_ms_per_token / 1000
        jitter = latency.jitter_ms > 0
        target = first
        tokens = fragments.tokens
        for k in range(call.output_tokens):
            if k:
                if jitter:
                    target += self.jittered(latency.decode_ms_per_token) / 1000
                else:
                    target = first + k * decode_s
            delay = target - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if not flight.started:
                flight.started = True
                await send(head)
                if fragments.role is not None:
                    await send(events.message(fragments.role))
            await send(events.message(tokens[k % len(tokens)]))
        await send(events.message(fragments.finish))
        if call.include_usage:
            usage = b'[],"usage":%s' % json.dumps(_usage(call), separators=(",", ":")).encode()
            await send(events.message(usage))
        flight.finished = True
        await send({"type": "http.response.body", "body": _DONE, "more_body": False})

    async def complete(self, call: Call, flight: _Flight, send: Send) -> None:
        loop = asyncio.get_running_loop()
        start_ns = time.perf_counter_ns()
        start = loop.time()
        latency = self.config.latency
        prefill_ms = self.jittered(latency.prefill_ms(call.prompt_tokens))
        gaps = call.output_tokens - 1
        if latency.jitter_ms > 0:
            decode_ms = sum(self.jittered(latency.decode_ms_per_token) for _ in range(gaps))
        else:
            decode_ms = gaps * latency.decode_ms_per_token
        delay = start + (prefill_ms + decode_ms) / 1000 - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        text = output_text(call.output_tokens)
        choice: dict[str, object]
        if call.kind == "chat":
            call_id, obj = "chatcmpl", "chat.completion"
            choice = {"index": 0, "message": {"role": "assistant", "content": text}}
        else:
            call_id, obj = "cmpl", "text_completion"
            choice = {"index": 0, "text": text}
        choice.update(logprobs=None, finish_reason="length")
        document = {
            "id": f"{call_id}-lab{next(self.ids)}",
            "object": obj,
            "created": int(time.time()),
            "model": self.config.model,
            "choices": [choice],
            "usage": _usage(call),
        }
        flight.finished = True
        body = json.dumps(document).encode()
        headers = self.headers(call, prefill_ms, start_ns, b"application/json")
        headers.append((b"content-length", b"%d" % len(body)))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


async def _watch(receive: Receive, flight: _Flight) -> None:
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


def create_app(config: LabConfig) -> Starlette:
    """The simulated endpoint as an ASGI app: ``/v1/models``, chat and completions."""
    lab = _Lab(config)

    async def models(request: Request) -> Response:
        auth = request.headers.get("authorization")
        if not lab.authorized(None if auth is None else auth.encode("latin-1")):
            return _error_response(_UNAUTHORIZED)
        model = {
            "id": config.model,
            "object": "model",
            "created": lab.created,
            "owned_by": "latdoc-lab",
        }
        return JSONResponse({"object": "list", "data": [model]})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        error = ApiError(exc.status_code, exc.detail)
        return _error_response(error, exc.headers)

    fast = {
        "/v1/chat/completions": _Endpoint(lab, "chat"),
        "/v1/completions": _Endpoint(lab, "completions"),
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

    Streams that already sent their headers end cleanly without ``[DONE]``. Call it
    on the server's event loop, before shutting the server down.
    """
    lab = getattr(app.state, "lab", None)
    if isinstance(lab, _Lab):
        lab.close()


def in_flight(app: Starlette) -> int:
    """How many completion requests ``app`` is serving right now."""
    lab = getattr(app.state, "lab", None)
    return len(lab.active) if isinstance(lab, _Lab) else 0
