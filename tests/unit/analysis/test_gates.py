"""``--fail-if``: a run the lab made 20% slower fails its gate against the baseline, an
unchanged one passes, gates that mean nothing are one clear error, and on runs drawn
alike a gate fails at most α of the time."""

from __future__ import annotations

import re

import numpy as np
import pytest

from false_positives import SHAPES, gates_once, tolerated
from latdoc import UsageError
from latdoc.analysis.gates import parse_gates
from latdoc.analysis.policy import ALPHA


def test_gates_read_shares_and_durations() -> None:
    gates = parse_gates("ttft_p50 > +10%, tpot_p95 > +5ms,total_p99>2s")
    assert [(g.metric, g.quantile, g.limit, g.relative) for g in gates] == [
        ("ttft", "p50", 0.10, True),
        ("tpot", "p95", 5.0, False),
        ("total", "p99", 2000.0, False),
    ]
    assert gates[0].allowed_ms(200.0) == pytest.approx(20.0)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("ttft_p50 < +10%", "write METRIC_pNN > +LIMIT"),
        ("latency_p50 > +10%", "metric 'latency'"),
        ("ttft_p75 > +10%", "quantile p75"),
        ("ttft_p50 > +10 parsecs", "write METRIC_pNN"),
        (" , ", "empty"),
    ],
)
def test_a_gate_that_means_nothing_is_one_clear_error(text: str, said: str) -> None:
    with pytest.raises(UsageError, match=re.escape(said)):
        parse_gates(text)


def test_gates_on_runs_drawn_alike_fail_at_most_alpha_as_a_family() -> None:
    """Four gates at +0% (about half their rows cross under the null) over two prompt
    lengths: eight one-sided tests, Holm-adjusted together."""
    rng = np.random.default_rng(23)
    reps = 200
    failed = sum(gates_once(rng, 20, SHAPES["busy"]) for _ in range(reps))
    assert failed <= tolerated(reps), f"{failed} of {reps} at α = {ALPHA}"
    seen = sum(gates_once(rng, 20, SHAPES["lognormal"], 0.5, "ttft_p50 > +10%") for _ in range(40))
    assert seen >= 36, "a 50% slower TTFT is seen"
