"""Gemini on Google Cloud's Vertex AI
(``POST …/projects/{p}/locations/{l}/publishers/google/models/{model}:streamGenerateContent``).

The base URL names the project and the location, as Vertex's REST reference writes
it: ``https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1``
(``https://aiplatform.googleapis.com/v1/projects/my-project/locations/global`` for the
global endpoint); the route after it names the model. The credential is an OAuth access
token sent as ``Authorization: Bearer``, read from ``GOOGLE_OAUTH_ACCESS_TOKEN`` (``export
GOOGLE_OAUTH_ACCESS_TOKEN=$(gcloud auth print-access-token)``; it lasts an hour).

The body, the events, the usage and the errors are Gemini's (:mod:`.gemini`). The
request asks for no ``alt``, so Vertex streams its documented JSON array, read element
by element as it arrives; ``?alt=sse`` on the base URL asks for server-sent events
instead, and either is read by the response's content type.
"""

from __future__ import annotations

from latdoc.probe._framing import JSON_ARRAY, SSE
from latdoc.probe.dialects._spec import DialectSpec, Route, bearer_auth
from latdoc.probe.dialects.gemini import (
    gemini_body,
    gemini_body_fields,
    gemini_thinking,
    gemini_tool_turn,
    gemini_tools,
    parse_gemini_event,
)

__all__ = ["SPEC"]

SPEC = DialectSpec(
    name="vertex",
    title="Gemini on Google Cloud's Vertex AI",
    route=Route("/publishers/google/models/{model}:streamGenerateContent"),
    key_variable="GOOGLE_OAUTH_ACCESS_TOKEN",
    auth_headers=bearer_auth,
    body=gemini_body,
    body_fields=gemini_body_fields,
    parse=parse_gemini_event,
    end_marker="a finishReason",
    reasoning=gemini_thinking,
    hosts=("aiplatform.googleapis.com",),
    otel_operation="generate_content",
    framings=(JSON_ARRAY, SSE),
    tools=gemini_tools,
    tool_turn=gemini_tool_turn,
    prompt_fields=("systemInstruction", "contents"),
)
