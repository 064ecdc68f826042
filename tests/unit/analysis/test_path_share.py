"""The network path's share is what a near region and a fast uplink would save the
user's own request: the round trip beyond a near region's and the upload of the user's
prompt, read without the round trip the peer's ACK adds to a timed send."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bank import draw, generate
from bank.counterfactual import counterfactual
from bank.generate import context
from latdoc import Kind, build_diagnosis


def _ratios(cause: str, prompt_tokens: int) -> list[float]:
    ratios = []
    for seed in range(20):
        s = draw(7000 + seed, causes=(cause,), intensity="clear", noise="low")
        s = replace(s, prompt_tokens=prompt_tokens)
        saving = counterfactual(s).savings_ms.get(Kind.NETWORK_PATH)
        if saving is None:
            continue
        d = build_diagnosis(generate(s), context(s))
        found = next((f for f in d.findings if f.kind is Kind.NETWORK_PATH), None)
        assert found is not None, s
        ratios.append(found.share_ms / saving)
    return ratios


@pytest.mark.parametrize("prompt_tokens", [2048])
def test_a_slow_uplinks_share_is_the_users_prompts_upload(prompt_tokens: int) -> None:
    """Median send of the 8K and 32K prompts together, plus a round trip on top of the
    one already in an acknowledged send, made about four round trips of a share where
    the path costs two (a slow uplink: 1.7 s against a true 0.7 s); the send timed to
    the ACK of all but the last two segments read a 2K prompt's upload 28% short."""
    ratios = _ratios("slow_upload", prompt_tokens)
    assert len(ratios) >= 15
    assert all(0.8 <= r <= 1.25 for r in ratios), sorted(ratios)


def test_a_far_regions_share_is_the_round_trip_beyond_a_near_ones() -> None:
    """The whole round trip and an 8K prompt's upload made a 2K-token request's share of
    a 130 ms round trip 250 ms, where a near region saves 80."""
    ratios = _ratios("far", 2048)
    assert len(ratios) >= 15
    assert all(0.8 <= r <= 1.25 for r in ratios), sorted(ratios)
