"""A replayed agent's user turns: the user waits from the turn's first request to its
answer's first token, the tool-calling request and the tool's time in it, and the SLO is
judged on that wait, not on the answer's own TTFT. Traces built by hand: the answers are
known by construction."""

from __future__ import annotations

import dataclasses

import pytest

from latdoc.features.load.analysis import Slo, user_turns
from latdoc.features.load.render import user_turns_document
from latdoc.records import RequestTrace, Sample, Step
from report_samples import make_trace

MS = 1_000_000


def _call(at_ms: float, ttft_ms: float) -> RequestTrace:
    """A request on a warm connection begun ``at_ms`` into the run, its first token
    ``ttft_ms`` after."""
    trace = make_trace(dns=None, connect=None, tls=None, send=0.0, wait=ttft_ms,
                       first_token=0.0, stream=100.0)  # fmt: skip
    return dataclasses.replace(
        trace, t0_ns=trace.t0_ns + round(at_ms * MS), first_token_ns=round(ttft_ms * MS)
    )


def _agent_turns() -> tuple[list[Sample], list[list[object]]]:
    """Two sessions of two turns; each turn a tool-calling request (40 ms to its first
    token, 100 ms in all), a 300 ms tool, then the answer (20 ms to its first token)."""
    samples: list[Sample] = []
    spans: list[list[object]] = []
    for session in range(2):
        for turn in range(2):
            at = 2000.0 * session + 800.0 * turn
            indexes = []
            for offset, ttft in ((0.0, 40.0), (100.0 + 300.0, 20.0)):
                indexes.append(len(samples))
                trace = _call(at + offset, ttft)
                samples.append(Sample(Step.LOAD, trace, concurrency=1, index=len(samples)))
            spans.append([turn, indexes])
    return samples, spans


def test_the_wait_holds_the_tool_calling_request_and_the_tool() -> None:
    samples, spans = _agent_turns()
    turns = user_turns(spans, samples)
    assert turns is not None
    assert [r.turn for r in turns.rows] == [0, 1]
    for row in (*turns.rows, turns.overall):
        assert row.calls == 2.0 and row.failed == 0 and row.met is None
        assert row.wait_ms is not None
        # 100 ms of the tool-calling request, 300 ms of the tool, 20 ms to the answer's
        # first token.
        assert row.wait_ms.p50 == pytest.approx(420.0)
        assert row.answer_ttft_ms == pytest.approx(20.0)
    assert turns.overall.turns == 4 and sum(r.turns for r in turns.rows) == 4
    document = user_turns_document(turns)
    assert document["all"]["wait_ms"]["p50"] == pytest.approx(420.0)


def test_the_slo_is_judged_on_what_the_user_waited() -> None:
    samples, spans = _agent_turns()
    # Every answer's own TTFT (20 ms) meets 200 ms; no turn's wait (420 ms) does.
    assert all(Slo(ttft_ms=200.0).met_by(s.trace) for s in samples)
    turns = user_turns(spans, samples, Slo(ttft_ms=200.0))
    assert turns is not None and turns.overall.met == 0
    turns = user_turns(spans, samples, Slo(ttft_ms=500.0))
    assert turns is not None and turns.overall.met == 4


def test_a_turn_whose_answer_failed_counts_as_failed() -> None:
    samples, spans = _agent_turns()
    broken = dataclasses.replace(samples[-1].trace, status=500, first_token_ns=None)
    samples[-1] = dataclasses.replace(samples[-1], trace=broken)
    turns = user_turns(spans, samples, Slo(ttft_ms=500.0))
    assert turns is not None
    assert (turns.overall.turns, turns.overall.failed, turns.overall.met) == (3, 1, 3)


@pytest.mark.parametrize(
    "kept", [None, "x", [[0]], [["a", [0]]], [[0, [-1]]], [[True, [0]]], [[0, [99]]]]
)
def test_meta_that_marks_no_turn_gives_none(kept: object) -> None:
    samples, _ = _agent_turns()
    assert user_turns(kept, samples) is None
