"""A stream held whole by a hop: the hop's share is the wait beyond what a request for
one token waited, not the whole wait with the prefill in it."""

from __future__ import annotations

from dataclasses import replace

from bank import draw, generate, truth
from bank.generate import context
from latdoc import Kind, build_diagnosis


def test_a_whole_held_stream_is_charged_the_hold_not_the_prefill() -> None:
    """Where the server does not tell how long it produced the answer, the share counted
    the whole wait from the end of sending, prefill and way back included (a slow
    prefill made the hop look twice its size)."""
    ratios = []
    for seed in range(12):
        base = draw(6100 + seed, causes=("buffering",), intensity="clear", noise="low")
        s = replace(base, buffer_whole=True, prefill_a_ms=1500.0)
        true = truth(s).sizes_ms.get(Kind.BUFFERING)
        assert true is not None
        d = build_diagnosis(generate(s), context(s))
        found = next((f for f in d.findings if f.kind is Kind.BUFFERING), None)
        assert found is not None, s
        ratios.append(found.share_ms / true)
    assert all(0.8 <= r <= 1.25 for r in ratios), sorted(ratios)


def test_slow_generation_behind_a_buffering_hop_is_still_read() -> None:
    """Inside each burst the gaps are zero, so the median gap read no generation at all:
    a decode of seconds behind a hop that passes 16–64 events at a time went unnamed.
    Over the bursts, from the first burst's arrival to the last, the time per token
    shows."""
    named = 0
    for seed in range(12):
        base = draw(6300 + seed, causes=("buffering",), intensity="clear", noise="low")
        s = replace(base, buffer_whole=False, tpot_ms=150.0, output_tokens=128)
        assert Kind.DECODE in truth(s).named
        d = build_diagnosis(generate(s), context(s))
        tpot = next((f.evidence["tpot_ms"] for f in d.findings if f.kind is Kind.DECODE), None)
        if tpot is not None and 120.0 <= tpot <= 180.0:
            named += 1
    assert named >= 11
