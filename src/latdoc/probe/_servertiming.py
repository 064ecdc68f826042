"""Server-reported timing from response headers.

``Server-Timing`` (W3C): ``name;dur=12.3;desc="..."`` entries separated by commas;
``openai-processing-ms``: the provider's own processing time; LiteLLM's proxy's
``x-litellm-overhead-duration-ms`` (the time the gateway itself added) and
``x-litellm-response-duration-ms`` (the whole call as the gateway timed it), kept as
``litellm-overhead`` and ``litellm-response``, and its detailed timing where it is
turned on (``x-litellm-callback-duration-ms``, ``x-litellm-timing-pre-processing-ms``,
``-llm-api-ms``, ``-post-processing-ms``, ``-message-copy-ms``) as ``litellm-callback``,
``litellm-pre-processing`` and so on, kept in the trace; a gateway that passes the upstream's
headers on under a prefix (LiteLLM's ``llm_provider-server-timing``) has the upstream's
``Server-Timing`` read from there when it sends none of its own. Values are in ms.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping

__all__ = ["TIMING_HEADERS", "UPSTREAM_SERVER_TIMING", "parse_server_timing"]

UPSTREAM_SERVER_TIMING = "llm_provider-server-timing"
"""The upstream's ``Server-Timing`` as LiteLLM's proxy passes it on."""

TIMING_HEADERS = {
    "openai-processing-ms": "openai-processing",
    "x-litellm-overhead-duration-ms": "litellm-overhead",
    "x-litellm-response-duration-ms": "litellm-response",
    "x-litellm-callback-duration-ms": "litellm-callback",
    "x-litellm-timing-pre-processing-ms": "litellm-pre-processing",
    "x-litellm-timing-llm-api-ms": "litellm-llm-api",
    "x-litellm-timing-post-processing-ms": "litellm-post-processing",
    "x-litellm-timing-message-copy-ms": "litellm-message-copy",
}
"""Headers that carry one duration in ms, each with the name it is kept under."""


def parse_server_timing(headers: Mapping[str, str]) -> dict[str, float]:
    """Durations in ms keyed by metric name; malformed entries are skipped."""
    out: dict[str, float] = {}
    raw = headers.get("server-timing") or headers.get(UPSTREAM_SERVER_TIMING)
    if raw:
        for entry in raw.split(","):
            name, *params = (part.strip() for part in entry.split(";"))
            if not name:
                continue
            for param in params:
                key, _, value = param.partition("=")
                if key.strip().lower() == "dur":
                    with contextlib.suppress(ValueError):
                        out[name] = float(value.strip().strip('"'))
    for header, told in TIMING_HEADERS.items():
        text = headers.get(header)
        if text:
            with contextlib.suppress(ValueError):
                ms = float(text)
                if math.isfinite(ms) and ms >= 0:
                    out[told] = ms
    return out
