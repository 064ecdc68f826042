"""Hidden reasoning of varying length is the reasoning's spread, not a queue: the
queueing rule reads TTFT less the reasoning decoded unseen before it."""

from __future__ import annotations

from dataclasses import replace

from bank import draw, generate, truth
from bank.generate import context
from latdoc import Kind, build_diagnosis


def test_hidden_reasoning_of_varying_length_is_not_called_queueing() -> None:
    """Reasoning of 100–400 tokens, hidden, moved identical requests' TTFT by a CV over
    0.5: the queueing rule fired and, larger, outranked the true reasoning. What is left
    once each request's reasoning is taken out is the estimate's own error, too small
    to name."""
    called = []
    for seed in range(12):
        base = draw(6500 + seed, causes=("reasoning",), intensity="clear", noise="low")
        s = replace(base, reasoning_shown=False, reasoning_tokens=200, reasoning_spread=0.5)
        assert truth(s).primary is Kind.REASONING
        d = build_diagnosis(generate(s), context(s))
        if d.verdict.primary is not Kind.REASONING or Kind.QUEUEING in d.verdict.contributing:
            called.append((s.seed, d.verdict.primary.value, [f.kind.value for f in d.findings]))
    assert not called, called
