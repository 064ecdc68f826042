"""Another run's measured values as the reference of healthy (``diagnose --reference-run``):
what that run measured becomes the slow edge of each quantity it measured, the rest stay
the profile's, and a run held against it is named by what its request would save were
it as fast as that run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bank import Scenario, draw, generate
from bank.generate import context
from latdoc import Kind, build_diagnosis
from latdoc.analysis.kinds.decode import token_tpot_ms
from latdoc.analysis.run_reference import measured_reference
from latdoc.analysis.stats import median_of
from latdoc.errors import UsageError
from latdoc.records import Sample
from latdoc.reference import healthy_reference, reference_from_record, reference_to_record
from latdoc.report import render_diagnosis, render_text


def _run(tpot_ms: float) -> tuple[list[Sample], Scenario]:
    s = replace(draw(21, causes=(), noise="low"), tpot_ms=tpot_ms, output_tokens=128)
    return generate(s), s


def test_the_runs_measured_values_become_the_edges_and_the_rest_stay_the_profiles() -> None:
    samples, _ = _run(20.0)
    ref = measured_reference(samples, run_id="r1", date="2026-12-01")
    measured = median_of(token_tpot_ms(s.trace) for s in samples if s.trace.ok)
    assert measured is not None
    assert ref["tpot_ms"].slow_edge == ref["tpot_ms"].typical == pytest.approx(measured)
    assert ref["tpot_ms"].cited() == "run r1, 2026-12-01"
    assert ref["rtt_ms"].slow_edge != healthy_reference().edge("rtt_ms")
    # What a run cannot measure stays the shipped profile's.
    assert ref["error_rate"] == healthy_reference()["error_rate"]
    assert (ref.name, ref.origin) == ("run r1", "run r1")
    # Kept with a run, it reads back the same.
    again = reference_from_record(reference_to_record(ref))
    assert again.edge("tpot_ms") == pytest.approx(ref.edge("tpot_ms"))


def test_a_run_held_against_a_faster_one_is_named_by_what_it_would_save() -> None:
    fast, _ = _run(20.0)
    slow, s = _run(28.0)
    ref = measured_reference(fast, run_id="fast")
    shipped = build_diagnosis(slow, context(s))
    # 28 ms a token is healthy by the profile (its edge is 30.2 ms) ...
    assert shipped.verdict.primary is Kind.HEALTHY
    held = build_diagnosis(slow, replace(context(s), reference=ref))
    # ... but against the run at 20 ms, 127 gaps of ~8 ms more are decode.
    assert held.verdict.primary is Kind.DECODE, held.findings
    (decode,) = [f for f in held.findings if f.kind is Kind.DECODE]
    assert decode.excess_ms == pytest.approx(127 * 8.0, rel=0.25)
    text = " ".join(render_text(render_diagnosis(held), 200).split())
    assert "healthy is your reference: run fast; against it, decode adds" in text
    # The same run held against itself adds nothing of degree.
    itself = build_diagnosis(fast, replace(context(s), reference=ref))
    assert Kind.DECODE not in (itself.verdict.primary, *itself.verdict.contributing)


def test_a_run_that_measured_nothing_is_refused_in_words() -> None:
    with pytest.raises(UsageError, match="run empty measured nothing a reference holds"):
        measured_reference([], run_id="empty")
