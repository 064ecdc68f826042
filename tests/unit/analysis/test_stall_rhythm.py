"""A stall is a pause beyond the stream's rhythm between reads: events a hop passes on
together (gaps of 0) leave the pauses between bursts as the rhythm, not as stalls."""

from __future__ import annotations

from latdoc.analysis.signals import find_stalls


def _bursts(events: int, size: int, pause_ms: float) -> list[float]:
    """The gaps of ``events`` events passed on ``size`` at a time, ``pause_ms`` apart."""
    return [pause_ms if (k + 1) % size == 0 else 0.0 for k in range(events - 1)]


def test_a_hop_passing_bursts_is_no_stall() -> None:
    """Four events of 25 ms a token held together: a read every 100 ms."""
    assert find_stalls(_bursts(64, 4, 100.0)) == []
    assert find_stalls(_bursts(64, 6, 150.0)) == []


def test_a_real_pause_among_bursts_is_still_a_stall() -> None:
    gaps = _bursts(64, 4, 100.0)
    gaps[31] = 900.0
    (stall,) = find_stalls(gaps)
    assert stall.after_token == 32 and stall.gap_ms == 900.0


def test_a_token_by_token_stream_keeps_its_rhythm() -> None:
    gaps = [20.0 + (k % 3) for k in range(40)]
    assert find_stalls(gaps) == []
    gaps[20] = 600.0
    (stall,) = find_stalls(gaps)
    assert stall.after_token == 21
