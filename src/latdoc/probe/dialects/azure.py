"""Azure OpenAI: OpenAI chat completions on an Azure resource.

Two routes, picked by the base URL:

- a deployment's: base ``https://my-resource.openai.azure.com``, then
  ``/openai/deployments/{model}/chat/completions?api-version=2024-10-21``, where
  ``--model`` names the deployment; another API version goes on the base URL
  (``https://my-resource.openai.azure.com?api-version=2025-04-01-preview``) and takes
  the place of this one;
- the v1 API's: a base URL ending ``/openai/v1``, then ``/chat/completions``, the
  deployment named as the body's ``model``, no API version.

The key is ``api-key``, read from ``AZURE_OPENAI_API_KEY``, or else a Microsoft Entra
ID access token from ``AZURE_OPENAI_AD_TOKEN`` (``az account get-access-token --resource
https://cognitiveservices.azure.com``), which goes as ``Authorization: Bearer``: a
credential shaped as a JSON Web Token (three base64url parts, the first ``eyJ``) is a
token, whichever variable holds it. The body and the events are chat completions'
(:mod:`.chat`); Azure's first chunk (``prompt_filter_results``, no choices) and each
chunk's ``content_filter_results`` carry no output.
"""

from __future__ import annotations

import re

from latdoc.probe.dialects import chat
from latdoc.probe.dialects._spec import DialectSpec, Route, bearer_auth

__all__ = ["API_VERSION", "SPEC"]

API_VERSION = "2024-10-21"
"""The data-plane API version a deployment's route asks for unless the base URL names one."""

_JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def _auth_headers(credential: str | None) -> list[tuple[bytes, bytes]]:
    if not credential:
        return []
    if _JWT.fullmatch(credential):
        return bearer_auth(credential)
    return [(b"api-key", credential.encode())]


SPEC = DialectSpec(
    name="azure",
    title="Azure OpenAI chat completions",
    route=Route(f"/openai/deployments/{{model}}/chat/completions?api-version={API_VERSION}"),
    other_routes=(Route("/chat/completions", after="/openai/v1"),),
    key_variable="AZURE_OPENAI_API_KEY",
    also_key_variables=("AZURE_OPENAI_AD_TOKEN",),
    auth_headers=_auth_headers,
    body=chat.SPEC.body,
    body_fields=chat.SPEC.body_fields,
    parse=chat.SPEC.parse,
    end_marker=chat.SPEC.end_marker,
    reasoning=chat.SPEC.reasoning,
    hosts=("openai.azure.com", "cognitiveservices.azure.com", "services.ai.azure.com"),
    tools=chat.SPEC.tools,
    tool_turn=chat.SPEC.tool_turn,
    prompt_fields=chat.SPEC.prompt_fields,
    usage_option=chat.SPEC.usage_option,
)
