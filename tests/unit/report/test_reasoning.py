"""The reasoning phase: how thinking is timed (streamed or not), and how it shows in every
rendering (the probe's waterfall, the diagnosis in the terminal, JSON and HTML) and is
kept by the store's trace codec."""

from __future__ import annotations

from dataclasses import replace

from latdoc import (
    Diagnosis,
    Finding,
    Kind,
    RequestTrace,
    Verdict,
    diagnosis_to_dict,
    render_diagnosis,
    render_html,
    render_text,
    render_waterfall,
    trace_to_dict,
)
from latdoc.analysis.facts import reasoning_facts, thinking_ms
from latdoc.model import RequestParts
from latdoc.report._html import page_context
from latdoc.report.names import format_ms
from latdoc.store.codec import trace_from_record, trace_to_record
from report_samples import make_diagnosis, make_trace

MS = 1_000_000
REASONING = {
    "reasoning_n": 5.0, "requests_n": 5.0, "hidden_n": 0.0, "reasoning_ms": 900.0,
    "ttfr_ms": 450.0, "ttfa_ms": 1350.0, "ttft_ms": 450.0, "reasoning_tokens": 220.0,
    "answer_tokens": 40.0,
}  # fmt: skip


def _thinking_trace() -> tuple[RequestTrace, int, int]:
    trace = make_trace(first_token=35.0, stream=1200.0)
    assert trace.first_token_ns is not None and trace.done_ns is not None
    answer = trace.first_token_ns + 900 * MS
    thought = replace(
        trace, first_reasoning_ns=trace.first_token_ns, first_answer_ns=answer, reasoning_tokens=60
    )
    return thought, trace.first_token_ns, answer


def test_waterfall_splits_reasoning_from_the_stream() -> None:
    trace, _, _ = _thinking_trace()
    text = render_text(render_waterfall(trace), 100)
    reasoning = next(line for line in text.splitlines() if line.strip().startswith("Reasoning"))
    streaming = next(line for line in text.splitlines() if line.strip().startswith("Streaming"))
    assert format_ms(900.0) in reasoning and "first answer token" in reasoning
    assert format_ms(300.0) in streaming
    assert "60 of them reasoning" in text


def test_trace_json_and_store_record_keep_the_reasoning_phase() -> None:
    trace, first, answer = _thinking_trace()
    doc = trace_to_dict(trace)
    assert doc["reasoning_ms"] == 900.0 and doc["reasoning_tokens"] == 60
    assert doc["ttfa_ms"] == round(answer / MS, 4) and doc["ttfr_ms"] == round(first / MS, 4)
    record = trace_to_record(trace)
    assert trace_from_record(record) == trace
    older = {k: v for k, v in record.items() if k not in ("first_answer_ns", "reasoning_tokens")}
    assert trace_from_record(older).reasoning_tokens is None


def _reasoning_diagnosis() -> Diagnosis:
    finding = Finding(Kind.REASONING, "Thinks first", "rule", REASONING, 900.0, 0.9)
    parts = RequestParts(60.0, 2.0, 400.0, 300.0, 3, reasoning_ms=900.0)
    return replace(
        make_diagnosis(),
        verdict=Verdict(Kind.REASONING, (), 0.9),
        findings=(finding,),
        shares_ms={Kind.REASONING: 900.0},
        reasoning=REASONING,
        typical_request=parts,
    )


def test_diagnosis_shows_the_reasoning_phase_in_the_terminal_json_and_html() -> None:
    d = _reasoning_diagnosis()
    text = " ".join(render_text(render_diagnosis(d), 120).split())
    assert "Reasoning (the model thinks before its first answer token)" in text
    assert "first answer token 1.35 s" in text and "reasoning tokens 220" in text
    doc = diagnosis_to_dict(d)
    assert doc["verdict"]["primary"] == "reasoning"
    assert doc["steps"]["reasoning"]["ttfa_ms"] == 1350.0
    assert doc["typical_request"]["reasoning_ms"] == 900.0
    title, rows = page_context(d, [])["measurements"][-1]
    assert title == "Reasoning"
    assert ("ttfa_ms", format_ms(1350.0)) in rows
    page = render_html(d, [])
    assert "p-reasoning" in page and "Reasoning" in page


def test_unstreamed_thinking_is_reported_tokens_times_the_time_per_token() -> None:
    trace = make_trace(first_token=35.0, stream=900.0)  # ten chunks of 11 tokens, 100 ms apart
    hidden = replace(trace, reasoning_tokens=50, output_tokens=160)
    seen, _, _ = _thinking_trace()
    assert thinking_ms(trace) is None
    ms, streamed = thinking_ms(hidden) or (0.0, True)
    assert not streamed and ms == 50 * (100.0 / 11)
    assert thinking_ms(seen) == (900.0, True)
    facts = reasoning_facts([hidden, trace, seen])
    assert facts["reasoning_n"] == 2 and facts["hidden_n"] == 1
    assert facts["reasoning_ms"] == ms
    assert reasoning_facts([trace]) == {}
