"""The simulated endpoint: an OpenAI-compatible API whose latency is known in advance.

- ``_config``: :class:`LabConfig`, every knob of the simulation, with its
  :class:`LatencyModel` and the injectable :class:`Fault`\\ s.
- ``_app``: the ASGI application (:func:`create_app`) and the truth each response
  reports; ``_state`` is its shared state, which handles each request; ``_request``
  validates a request as an OpenAI server does into a ``_call`` (or refuses it),
  ``_plan`` plans its service, ``_serve`` streams or answers it, ``_events`` and
  ``_writers`` build server-sent events, ``_faults`` injects failures, ``_slots``
  queues requests for parallel slots under background load, ``_cache`` is the
  prefix cache.
- ``dialects``: one stand-in per API served (chat, completions, Anthropic
  messages, responses, Gemini, Vertex AI, Azure OpenAI, Bedrock: routes, key, prompt,
  reasoning, events), listed once in ``dialects.STAND_INS``.
- ``_tokenizer``: the lab's own tokenizer, which makes every token count exact.
- ``_server``: :class:`LabServer`, the endpoint on a real socket in a background
  thread, and :func:`serve_forever`, the same blocking.
- ``_process``: :class:`LabProcess`, the server in a child process, for timing
  under load.
- ``_demo``: :data:`DEMO_CONFIG`, what ``latdoc diagnose`` serves with no engine.

Importing this package starts nothing; uvicorn, hypercorn and trustme are imported
when a server starts.
"""

from __future__ import annotations

from latdoc.lab.sim._app import create_app, in_flight, requests_received
from latdoc.lab.sim._config import Fault, LabConfig, LatencyModel, TimingForm, UsageShape
from latdoc.lab.sim._demo import DEMO_CONFIG
from latdoc.lab.sim._events import OUTPUT_WORDS, output_text, output_token
from latdoc.lab.sim._process import LabProcess
from latdoc.lab.sim._request import REPEAT
from latdoc.lab.sim._server import LabServer, serve_forever
from latdoc.lab.sim._tokenizer import (
    CHAT_MESSAGE_OVERHEAD,
    CHAT_REPLY_OVERHEAD,
    chat_prompt_token_list,
    chat_prompt_tokens,
    count_tokens,
    tokenize,
)

__all__ = [
    "CHAT_MESSAGE_OVERHEAD",
    "CHAT_REPLY_OVERHEAD",
    "DEMO_CONFIG",
    "OUTPUT_WORDS",
    "REPEAT",
    "Fault",
    "LabConfig",
    "LabProcess",
    "LabServer",
    "LatencyModel",
    "TimingForm",
    "UsageShape",
    "chat_prompt_token_list",
    "chat_prompt_tokens",
    "count_tokens",
    "create_app",
    "in_flight",
    "output_text",
    "output_token",
    "requests_received",
    "serve_forever",
    "tokenize",
]
