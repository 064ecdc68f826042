"""The APIs the simulated endpoint serves, one stand-in module each, listed once in
:data:`STAND_INS`.

- :mod:`.chat`: OpenAI chat completions (``/v1/chat/completions``);
- :mod:`.completions`: OpenAI's (legacy) completions (``/v1/completions``);
- :mod:`.anthropic`: Anthropic's Messages API (``/v1/messages``);
- :mod:`.responses`: OpenAI's Responses API (``/v1/responses``);
- :mod:`.gemini`: Google's Gemini API (``/v1beta/models/{model}:streamGenerateContent``);
- :mod:`.vertex`: Gemini on Vertex AI (``/v1/projects/…/publishers/google/models/…``);
- :mod:`.azure`: Azure OpenAI (``/openai/deployments/{deployment}/chat/completions``,
  ``/openai/v1/chat/completions``);
- :mod:`.bedrock`: Amazon Bedrock's ConverseStream (``/model/{modelId}/converse-stream``).

Each module defines one :class:`StandIn` (``STAND_IN``); the app routes each one's
paths to it, and a stand-in whose API takes parameters in the URL reads them as a
:data:`Query`. The lab keeps its own list, apart from the probe's dialects, because
it stands apart from the core it tests.
"""

from __future__ import annotations

from latdoc.lab.sim.dialects import (
    anthropic,
    azure,
    bedrock,
    chat,
    completions,
    gemini,
    responses,
    vertex,
)
from latdoc.lab.sim.dialects._stand_in import Query, StandIn

__all__ = ["STAND_INS", "Query", "StandIn"]

STAND_INS: tuple[StandIn, ...] = (
    chat.STAND_IN,
    completions.STAND_IN,
    anthropic.STAND_IN,
    responses.STAND_IN,
    gemini.STAND_IN,
    vertex.STAND_IN,
    azure.STAND_IN,
    bedrock.STAND_IN,
)
"""Every API the lab serves."""
