"""Quirks of real endpoints, played by the lab and read by the real probe and diagnosis.

Several tokens per streamed event (fixed or an irregular seeded draw), SSE keep-alive
comments while a request waits for its slot and its prefill, decode that slows with
the streams in flight (continuous batching), and a rare error rate: each must reach
the client as the knob says, and a healthy endpoint with a healthy quirk must still
be named healthy. The lab runs in a :class:`LabProcess`, so client and server do not
share an interpreter lock.
"""

from __future__ import annotations

import pytest

from latdoc.lab.sim import LabConfig, LatencyModel


def test_batch_slowdown_is_validated() -> None:
    with pytest.raises(ValueError, match="batch_slowdown must be a finite number >= 0"):
        LatencyModel(batch_slowdown=-0.1)
    with pytest.raises(ValueError, match="tokens_per_event must be >= 1"):
        LabConfig(tokens_per_event=0)
    with pytest.raises(ValueError, match="tokens_per_event_max must be >= 4"):
        LabConfig(tokens_per_event=4, tokens_per_event_max=3)
    with pytest.raises(ValueError, match="keepalive_comment_ms must be a finite number"):
        LabConfig(keepalive_comment_ms=float("nan"))
    with pytest.raises(ValueError, match="cannot go with headers_after_prefill"):
        LabConfig(keepalive_comment_ms=10.0, headers_after_prefill=True)
