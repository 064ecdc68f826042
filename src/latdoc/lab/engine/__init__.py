"""A real engine: llama.cpp's own HTTP server on a small model shipped in a package.

- ``_llamacpp``: :class:`EngineServer`, llama.cpp's server (through the xllamacpp
  bindings) on SmolLM2-135M-Instruct, found by :func:`find_model`;
  :func:`engine_available` says in one line why it cannot run here.

Importing this package imports neither xllamacpp nor the model's package.
"""

from __future__ import annotations

from latdoc.lab.engine._llamacpp import (
    INSTALL_HINT,
    MODEL_DISTRIBUTION,
    MODEL_FILE,
    MODEL_VERSION,
    READY_TIMEOUT_S,
    EngineServer,
    engine_available,
    find_model,
)

__all__ = [
    "INSTALL_HINT",
    "MODEL_DISTRIBUTION",
    "MODEL_FILE",
    "MODEL_VERSION",
    "READY_TIMEOUT_S",
    "EngineServer",
    "engine_available",
    "find_model",
]
