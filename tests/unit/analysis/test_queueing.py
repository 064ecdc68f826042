"""The queueing rule reads the swing of identical requests' first tokens, except where
the path loses packets: a loss no counter saw swings them as a queue would."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from latdoc import Kind
from latdoc.analysis.kinds.queueing import queueing
from latdoc.analysis.loss import Counts, Loss

SWINGING = {
    "ttft_cv": 0.6,
    "ttft_p95_over_p50": 2.5,
    "ttft_p50_ms": 200.0,
    "ttft_mean_ms": 260.0,
    "ttft_quiet_ms": 150.0,
    "concurrent_over_sequential": None,
    "concurrent_ttft_p50_ms": None,
    "sequential_n": 20,
    "concurrency": None,
}


def _facts(loss: Loss | None) -> Any:
    return SimpleNamespace(load=dict(SWINGING), server=None, server_account=None, loss=loss)


def _loss(retransmits: int, losing: int) -> Loss:
    counts = Counts(retransmits=retransmits, sent=400, out_of_order=0, received=400)
    return Loss(counts, requests=20, losing=losing, rttvar_ms=5.0, rtt_ms=80.0)


def test_a_swing_on_a_clean_path_is_named_queueing_with_the_mean_over_a_quiet_request() -> None:
    finding = queueing(_facts(None))
    assert finding is not None and finding.kind == Kind.QUEUEING
    assert "swings" in finding.title
    assert finding.share_ms == 110.0
    assert queueing(_facts(_loss(retransmits=1, losing=1))) is not None


def test_the_same_swing_on_a_lossy_path_is_left_to_the_path() -> None:
    loss = _loss(retransmits=40, losing=8)
    assert loss.lossy
    assert queueing(_facts(loss)) is None
