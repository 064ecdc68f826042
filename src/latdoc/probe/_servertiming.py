"""Server-reported timing from response headers.

``Server-Timing`` (W3C): ``name;dur=12.3;desc="..."`` entries separated by commas;
``openai-processing-ms``: the provider's own processing time. Values are in ms.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping


def parse_server_timing(headers: Mapping[str, str]) -> dict[str, float]:
    """Durations in ms keyed by metric name; malformed entries are skipped."""
    out: dict[str, float] = {}
    raw = headers.get("server-timing")
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
    processing = headers.get("openai-processing-ms")
    if processing:
        with contextlib.suppress(ValueError):
            out["openai-processing"] = float(processing)
    return out
