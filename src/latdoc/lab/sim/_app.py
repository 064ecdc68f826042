"""The simulated OpenAI-compatible endpoint as an ASGI application: :func:`create_app`
routes each API the lab stands in for (:data:`~latdoc.lab.sim.dialects.STAND_INS`:
OpenAI chat completions, completions and Responses, Anthropic's Messages, Gemini,
Vertex AI, Azure OpenAI, Amazon Bedrock's ConverseStream) and
``/v1/models`` to one :class:`~latdoc.lab.sim._state.LabState`,
whose latency follows known parameters and whose responses report the truth (documented
on :func:`create_app`). The streaming routes are plain ASGI callables dispatched ahead
of starlette's router and middleware: the hot path builds every event from pre-encoded
fragments and hands it to the server as its own ``http.response.body`` message.
:func:`end_streams`, :func:`in_flight` and :func:`requests_received` let the lab
server stop it and count its requests. Importing this module starts nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from latdoc.lab.sim import dialects
from latdoc.lab.sim._call import UNAUTHORIZED, ApiError
from latdoc.lab.sim._config import LabConfig
from latdoc.lab.sim._faults import ResetConnection
from latdoc.lab.sim._state import LabState
from latdoc.lab.sim.dialects import StandIn

__all__ = ["create_app", "end_streams", "in_flight", "requests_received"]


class _Endpoint:
    """The ASGI callable of one completion route."""

    def __init__(self, lab: LabState, api: StandIn) -> None:
        self.lab = lab
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.lab.handle(self.api, scope, receive, send)


class _LabApp(Starlette):
    """Starlette, with the completion routes' POSTs dispatched ahead of its middleware
    (a route that names the model in its path goes through starlette's router, which
    gives the model as the ``model`` path parameter)."""

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
    Anthropic messages, responses, Gemini, Vertex AI, Azure OpenAI and Bedrock.

    ``reset_connection`` lets the ``reset`` fault find the request's socket (the lab
    server passes its listener's); without it a reset ends the response abruptly
    by raising into the HTTP server, which closes the connection.

    Each API's stand-in (:mod:`latdoc.lab.sim.dialects`) checks its key and headers
    (Anthropic's route also takes ``x-api-key`` and asks for ``anthropic-version``,
    Gemini's ``x-goog-api-key``, Azure's ``api-key`` and an ``api-version``, Bedrock's
    a SigV4 ``Authorization`` of the right shape) and builds its events (Gemini's as
    server-sent events or one JSON array, Bedrock's as binary event-stream messages). A model with
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
    """
    lab = LabState(config, reset_connection)
    served = {
        path: _Endpoint(lab, api)
        for api in dialects.STAND_INS
        for path in (api.path, *api.also_paths)
    }
    app = _LabApp(
        {path: endpoint for path, endpoint in served.items() if "{model}" not in path},
        routes=[
            Route("/v1/models", _models(lab, config), methods=["GET"]),
            *(Route(path, endpoint, methods=["POST"]) for path, endpoint in served.items()),
        ],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.lab = lab
    return app


def _models(lab: LabState, config: LabConfig) -> Callable[[Request], Awaitable[Response]]:
    """``/v1/models``: the models the lab serves, to a client with the key."""

    async def models(request: Request) -> Response:
        auth = request.headers.get("authorization")
        if not lab.authorized(None if auth is None else auth.encode("latin-1")):
            return _error_response(UNAUTHORIZED)
        models = [
            {"id": model, "object": "model", "created": lab.created, "owned_by": "latdoc-lab"}
            for model in config.models
        ]
        return JSONResponse({"object": "list", "data": models})

    return models


async def _http_error(request: Request, exc: Exception) -> Response:
    """An HTTP error the router raised (no such path, a method not allowed), in the
    API's error document."""
    assert isinstance(exc, HTTPException)
    error = ApiError(exc.status_code, exc.detail)
    return _error_response(error, exc.headers)


def end_streams(app: Starlette) -> None:
    """End every request in flight on ``app`` and refuse new ones (503).

    Streams that already sent their headers end cleanly without ``[DONE]``; the
    background load stops. Call it on the server's event loop, before shutting the
    server down.
    """
    lab = getattr(app.state, "lab", None)
    if isinstance(lab, LabState):
        lab.close()


def in_flight(app: Starlette) -> int:
    """How many completion requests ``app`` is serving right now."""
    lab = getattr(app.state, "lab", None)
    return len(lab.active) if isinstance(lab, LabState) else 0


def requests_received(app: Starlette) -> int:
    """How many completion requests ``app`` has received since it started, faulted or not.

    The server's own count, so a client's retries can be checked against it.
    """
    lab = getattr(app.state, "lab", None)
    return lab.received if isinstance(lab, LabState) else 0
