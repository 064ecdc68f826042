"""Azure OpenAI as the lab serves it: a deployment's chat completions
(``/openai/deployments/{deployment}/chat/completions?api-version=…``, the deployment
named as the model) and the v1 API's (``/openai/v1/chat/completions``, the model in
the body).

The key comes as ``api-key`` (or an Entra ID token as ``Authorization: Bearer``); a
wrong one is Azure's ``401`` "Access denied". A deployment's route wants an
``api-version`` (without one it is Azure's ``404 Resource not found``); the v1 route
takes none. An unknown deployment is ``DeploymentNotFound``. The stream is chat
completions' (:mod:`.chat`), after the chunk Azure sends first: no choices, only the
prompt's ``prompt_filter_results``.
"""

from __future__ import annotations

import json

from latdoc.lab.sim._call import ApiError, Call
from latdoc.lab.sim._events import CHAT
from latdoc.lab.sim._writers import ChatWriter, StreamWriter
from latdoc.lab.sim.dialects import chat
from latdoc.lab.sim.dialects._stand_in import Authorized, Headers, Query, StandIn

__all__ = ["STAND_IN", "AzureWriter"]

_V1 = "/openai/v1/chat/completions"
_SAFE = {"filtered": False, "severity": "safe"}
_PROMPT_FILTER = {
    "choices": [],
    "created": 0,
    "id": "",
    "model": "",
    "object": "",
    "prompt_filter_results": [
        {
            "prompt_index": 0,
            "content_filter_results": {
                name: _SAFE for name in ("hate", "self_harm", "sexual", "violence")
            },
        }
    ],
}


class AzureWriter(ChatWriter):
    """Chat completions chunks, after Azure's prompt filter chunk."""

    def opening(self) -> bytes:
        head = b"data: %s\n\n" % json.dumps(_PROMPT_FILTER, separators=(",", ":")).encode()
        return head + super().opening()


def _writer(call: Call, number: int, stamp: bool, cached_tokens: int) -> StreamWriter:
    return AzureWriter(call, f"chatcmpl-lab{number}", stamp, CHAT, "chat.completion.chunk")


def _check_key(header: Headers, authorized: Authorized) -> None:
    key = header(b"api-key")
    if not authorized(header(b"authorization") if key is None else b"Bearer " + key):
        raise ApiError(
            401,
            "Access denied due to invalid subscription key or wrong API endpoint. Make sure "
            "to provide a valid key for an active subscription and use a correct regional "
            "API endpoint for your resource.",
            code="401",
        )


def _check_query(path: str, query: Query) -> None:
    if not path.endswith(_V1) and not query.get("api-version"):
        raise ApiError(404, "Resource not found", code="404")


def _error_body(error: ApiError) -> bytes:
    """Azure's own words for a refused key, a missing API version and an unknown
    deployment; OpenAI's for the rest."""
    code = json.loads(error.body)["error"].get("code")
    if code == "model_not_found":
        message = (
            "The API deployment for this resource does not exist. If you created the "
            "deployment within the last 5 minutes, please wait a moment and try again."
        )
        return json.dumps({"error": {"code": "DeploymentNotFound", "message": message}}).encode()
    if code in ("401", "404"):
        return json.dumps({"error": {"code": code, "message": error.message}}).encode()
    return error.body


STAND_IN = StandIn(
    name="azure",
    path="/openai/deployments/{model}/chat/completions",
    also_paths=(_V1,),
    messages=chat.STAND_IN.messages,
    writer=_writer,
    document=chat.STAND_IN.document,
    reasoning=chat.STAND_IN.reasoning,
    prompt_param=chat.STAND_IN.prompt_param,
    check_key=_check_key,
    check_query=_check_query,
    error_body=_error_body,
)
