"""The simulated endpoint ``latdoc diagnose`` uses when no real engine is installed.

Classic serving: prefill grows with the square of the prompt (about 70 ms at 128
tokens, 0.9 s at 2K, 9 s at 8K), 12 ms per output token. A diagnosis should find
input length to be the kind of slow, and nothing wrong with the network.
"""

from __future__ import annotations

from latdoc.lab.sim._config import LabConfig, LatencyModel

DEMO_CONFIG = LabConfig(
    model="lab-sim",
    latency=LatencyModel(
        prefill_base_ms=40.0,
        prefill_ms_per_token=0.15,
        prefill_ms_per_token2=0.00012,
        decode_ms_per_token=12.0,
        jitter_ms=2.0,
    ),
    seed=7,
)
