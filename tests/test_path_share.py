"""The network path's share is one round trip plus a long prompt's upload, read at the
seed's long prompt and without the round trip the peer's ACK adds to a timed send."""

from __future__ import annotations

from bank import draw, generate, truth
from bank.generate import context
from latdoc import Kind, build_diagnosis


def test_the_path_share_is_what_the_path_costs_a_long_prompt() -> None:
    """Median send of the 8K and 32K prompts together, plus a round trip on top of the
    one already in an acknowledged send, made about four round trips of a share where
    the path costs two (a slow uplink: 1.7 s against a true 0.7 s)."""
    ratios = []
    for seed in range(20):
        s = draw(7000 + seed, causes=("slow_upload",), intensity="clear", noise="low")
        true = truth(s).sizes_ms.get(Kind.NETWORK_PATH)
        if true is None:
            continue
        d = build_diagnosis(generate(s), context(s))
        found = next((f for f in d.findings if f.kind is Kind.NETWORK_PATH), None)
        assert found is not None, s
        ratios.append(found.share_ms / true)
    assert len(ratios) >= 15
    assert all(0.75 <= r <= 1.3 for r in ratios), sorted(ratios)
