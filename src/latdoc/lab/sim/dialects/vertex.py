"""Gemini on Vertex AI as the lab serves it
(``/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:streamGenerateContent``,
and express mode's ``/v1/publishers/google/models/{model}:streamGenerateContent``; each
under ``/v1beta1`` too, where Google's SDK sends them).

The credential is an OAuth access token as ``Authorization: Bearer`` (or express
mode's ``x-goog-api-key``); a wrong one is ``401 UNAUTHENTICATED``. Any project and
location are served. Everything else is Gemini's (:mod:`.gemini`): the body, the
thinking, the errors, and the stream, a JSON array unless ``alt=sse`` asks for
server-sent events.
"""

from __future__ import annotations

from latdoc.lab.sim._call import ApiError
from latdoc.lab.sim.dialects import gemini
from latdoc.lab.sim.dialects._stand_in import Authorized, Headers, StandIn

__all__ = ["STAND_IN"]


def _check_key(header: Headers, authorized: Authorized) -> None:
    key = header(b"x-goog-api-key")
    if not authorized(header(b"authorization") if key is None else b"Bearer " + key):
        raise ApiError(
            401,
            "Request had invalid authentication credentials. Expected OAuth 2 access token, "
            "login cookie or other valid authentication credential.",
        )


_PROJECT = "/projects/{project}/locations/{location}"
_MODEL = "/publishers/google/models/{model}:streamGenerateContent"

STAND_IN = StandIn(
    name="vertex",
    path="/v1" + _PROJECT + _MODEL,
    also_paths=("/v1beta1" + _PROJECT + _MODEL, "/v1" + _MODEL, "/v1beta1" + _MODEL),
    messages=gemini.STAND_IN.messages,
    writer=gemini.STAND_IN.writer,
    document=gemini.STAND_IN.document,
    reasoning=gemini.STAND_IN.reasoning,
    prompt_param=gemini.STAND_IN.prompt_param,
    streams=True,
    usage_always=True,
    check_key=_check_key,
    error_body=gemini.STAND_IN.error_body,
    output_limit=gemini.STAND_IN.output_limit,
    json_array=gemini.STAND_IN.json_array,
    reasoning_shown=gemini.STAND_IN.reasoning_shown,
)
