"""The lab: endpoints and networks with known ground truth, for tests, benchmarks and demos.

Three rooms, each a package with its own map:

- :mod:`latdoc.lab.sim`: a simulated OpenAI-compatible endpoint whose latency
  follows a :class:`LatencyModel`, in a thread (:class:`LabServer`) or a child
  process (:class:`LabProcess`).
- :mod:`latdoc.lab.net`: an impaired network (:class:`LabNet`): namespaces, a
  user-space link with delay, jitter, rate and loss, and a slow DNS server.
- :mod:`latdoc.lab.engine`: llama.cpp's server on a small shipped model
  (:class:`EngineServer`).
- :mod:`latdoc.lab.command`: ``latdoc lab serve|net|engine``, the lab's own command
  line, which ``latdoc`` adds under its commands.
- :mod:`latdoc.lab.raycluster`: a real Ray cluster of several nodes on loopback,
  with custom resources (:class:`~latdoc.lab.raycluster.LocalRayCluster`), for load
  workers and vantage points.

Shared by the rooms: :mod:`latdoc.lab.tls`, the lab's certificate authority, and
``_service``, the one way every lab service starts and stops (``with`` or
``start``/``stop``). Importing any of them starts nothing.
"""

from __future__ import annotations

from latdoc.lab._builtin import builtin_endpoint
from latdoc.lab.engine import EngineServer, engine_available
from latdoc.lab.net import LabNet, LinkSettings, NetSettings
from latdoc.lab.sim import (
    DEMO_CONFIG,
    Fault,
    LabConfig,
    LabProcess,
    LabServer,
    LatencyModel,
    TimingForm,
    UsageShape,
    serve_forever,
)

__all__ = [
    "DEMO_CONFIG",
    "EngineServer",
    "Fault",
    "LabConfig",
    "LabNet",
    "LabProcess",
    "LabServer",
    "LatencyModel",
    "LinkSettings",
    "NetSettings",
    "TimingForm",
    "UsageShape",
    "builtin_endpoint",
    "engine_available",
    "serve_forever",
]
