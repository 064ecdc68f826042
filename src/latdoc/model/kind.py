"""The closed set of answers to "which kind of slow is this?", by the names stored runs
and JSON documents use. What each kind means, how it is found and shown is its spec
(:mod:`latdoc.analysis.kinds`), looked up by the kind."""

from __future__ import annotations

import enum

__all__ = ["Kind"]


class Kind(enum.StrEnum):
    """The closed set of answers to "which kind of slow is this?"."""

    NETWORK_SETUP = "network_setup"
    """DNS, TCP and TLS handshakes; connections not reused."""
    NETWORK_PATH = "network_path"
    """Round-trip time and bandwidth between client and server."""
    INPUT_LENGTH = "input_length"
    """Prefill that grows with the prompt."""
    QUEUEING = "queueing"
    """Server-side wait that follows load, not length."""
    DECODE = "decode"
    """Slow generation or long outputs."""
    REASONING = "reasoning"
    """A reasoning model thinking before its first answer token."""
    STALLS = "stalls"
    """Pauses in the middle of a stream."""
    BUFFERING = "buffering"
    """A proxy, gateway or CDN holds the stream back and delivers it in bursts."""
    CLIENT = "client"
    """The client's own pool or event loop holds requests back."""
    ERRORS = "errors"
    """Rate limits, server errors, timeouts."""
    HEALTHY = "healthy"
    """Nothing above stands out."""
