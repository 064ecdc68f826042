"""The user's typical request: the shares, the noticeable bar and the verdict are of one
request, of the user's prompt (``--prompt-tokens``) or the seed's 2K one, read from the
fitted length curve; a longer prompt that would change the verdict is said in one line.

The arithmetic is checked on the truth bank's synthetic samples (no sockets); the new
user's endpoint (prefill 155 ms at 128 tokens, 4.3× at 2K, 15× at 8K) runs once
against the lab over loopback and is diagnosed for two requests."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bank import Scenario, draw, generate
from bank.generate import context
from latdoc import Kind, build_diagnosis
from latdoc.model.document import diagnosis_to_dict
from latdoc.records import Sample
from latdoc.report import render_diagnosis, render_html, render_text
from latdoc.report.names import format_ms


def _grown_samples() -> tuple[list[Sample], Scenario]:
    """A healthy endpoint but for a prefill of 0.5 ms a token."""
    s = replace(draw(11, causes=(), noise="low"), prefill_b_ms=0.5, prefill_a_ms=60.0)
    return generate(s), s


def test_the_bar_and_input_lengths_share_are_of_one_request_at_the_users_prompt() -> None:
    samples, s = _grown_samples()
    base = build_diagnosis(samples, context(s))
    for tokens in (2048, 5000, 8192):
        d = build_diagnosis(samples, replace(context(s), prompt_tokens=tokens))
        check, curve, w, bar = d.length_check, d.length, d.workload, d.noticeable
        assert check is not None and curve is not None and w is not None and bar is not None
        short = curve.points[0].prompt_tokens
        assert check.long_tokens == tokens and w.prompt_tokens == tokens and w.told
        growth = curve.predict_ms(tokens) - curve.predict_ms(short)
        assert check.growth_ms == pytest.approx(growth)
        assert w.growth_ms == pytest.approx(growth)
        assert w.total_ms == pytest.approx(bar.typical_ms)
        assert w.total_ms == pytest.approx(w.short_ms + growth)
        assert base.workload is not None and w.short_ms == pytest.approx(base.workload.short_ms)
        if Kind.INPUT_LENGTH in d.shares_ms:
            assert d.shares_ms[Kind.INPUT_LENGTH] == pytest.approx(growth, abs=1e-3)
        assert d.longer_prompt is None


def test_a_prompt_beyond_the_longest_length_is_read_there_and_said_so() -> None:
    samples, s = _grown_samples()
    d = build_diagnosis(samples, replace(context(s), prompt_tokens=100_000))
    check, curve, w = d.length_check, d.length, d.workload
    assert check is not None and curve is not None and w is not None
    longest = curve.points[-1].prompt_tokens
    assert check.long_tokens == w.prompt_tokens == longest
    assert check.asked_tokens == w.asked_tokens == 100_000
    assert "not extrapolated" in check.why
    short = build_diagnosis(samples, replace(context(s), prompt_tokens=64))
    assert short.workload is not None and short.workload.growth_ms == 0.0
    assert short.workload.prompt_tokens == 64 and Kind.INPUT_LENGTH not in short.shares_ms


def test_the_request_at_the_users_concurrency_is_what_its_kinds_and_the_rest_add_up_to() -> None:
    s = replace(draw(11, causes=("burst_queue",), intensity="clear", noise="low"),
                prefill_b_ms=0.5, prefill_a_ms=60.0)  # fmt: skip
    d = build_diagnosis(generate(s), replace(context(s), prompt_tokens=2048))
    w, bar = d.workload, d.noticeable
    assert w is not None and bar is not None
    queue = next(f for f in d.findings if f.kind is Kind.QUEUEING)
    # The wait among the user's streams is part of their request, not on top of it.
    assert queue.beyond_alone_ms == pytest.approx(queue.share_ms) and queue.share_ms > 0
    assert w.beyond_alone_ms == pytest.approx(sum(f.beyond_alone_ms for f in d.findings))
    assert w.total_ms == pytest.approx(w.short_ms + w.growth_ms + w.beyond_alone_ms)
    assert w.total_ms == pytest.approx(bar.typical_ms)
    named = sum(ms for k, ms in d.shares_ms.items() if k not in d.verdict.negligible)
    assert named <= w.total_ms
    text = render_text(render_diagnosis(d), width=300)
    assert "that queueing adds beyond a request sent alone" in text
    (rest,) = [line for line in text.splitlines() if "the rest of it" in line]
    assert format_ms(w.total_ms - named) in rest
    # The printed document says the same figures, and they add up there too.
    doc = diagnosis_to_dict(d)
    printed = doc["workload"]
    assert printed["beyond_alone_ms"] == pytest.approx(w.beyond_alone_ms, abs=1e-3)
    shown = sum(
        f["share_ms"] for f in doc["findings"] if f["kind"] not in doc["verdict"]["negligible"]
    )
    assert shown + printed["rest_ms"] == pytest.approx(printed["total_ms"], abs=0.01)


def test_the_pages_bar_is_the_request_the_verdict_speaks_of() -> None:
    """The demo's page said "a typical request … 9.93 s" and, two lines below, "Where the
    time of that request goes (10.16 s in all)": its bar summed what each kind adds. Its
    total is the request's, its segments the kinds' shares and the rest of it."""
    s = replace(draw(11, causes=("burst_queue",), intensity="clear", noise="low"),
                prefill_b_ms=0.5, prefill_a_ms=60.0)  # fmt: skip
    d = build_diagnosis(generate(s), replace(context(s), prompt_tokens=2048))
    assert d.workload is not None and d.rest_ms is not None
    page = render_html(d, [])
    assert f"({format_ms(d.workload.total_ms)} in all)" in page
    assert f"{format_ms(d.workload.total_ms)} end to end" in page
    legend = page[page.index('<ul class="legend">') :]
    legend = legend[: legend.index("</ul>")]
    shown = [format_ms(ms) for ms in (*d.noticed_shares().values(), d.rest_ms)]
    assert legend.count("<strong>") == len(shown)
    for ms in shown:
        assert f"<strong>{ms}</strong>" in legend
