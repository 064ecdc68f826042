"""The HTML report: self-contained, escaped, with plots that match the numbers."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest

from latdoc.analysis.diagnosis import (
    Diagnosis,
    Finding,
    Kind,
    LengthCurve,
    LengthPoint,
    Remedy,
    Scenario,
    Verdict,
)
from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.records import Chunk, RequestTrace, Sample, StepNote
from latdoc.report.html import render_html
from latdoc.report.names import kind_name
from latdoc.report.svg import ms_tick_labels, nice_ticks
from latdoc.report.svg_waterfall import MAX_ROWS, phase_segments

ENDPOINT = "https://api.example.com/v1/chat/completions"
MS = 1_000_000


def make_trace(
    *,
    dns: float | None = 12.0,
    connect: float | None = 24.0,
    tls: float | None = 41.0,
    send: float = 2.5,
    wait: float = 380.0,
    first_token: float | None = 35.0,
    stream: float | None = 1200.0,
    prompt_tokens: int | None = 128,
    output_tokens: int = 100,
    model: str = "qwen2.5-7b-instruct",
) -> RequestTrace:
    """A trace from phase durations in ms (None: phase not measured, e.g. a reused connection)."""
    elapsed_ns = 150_000
    marks: list[int | None] = [elapsed_ns]
    for duration in (dns, connect, tls, send, wait, first_token, stream):
        if duration is None:
            marks.append(None)
        else:
            elapsed_ns += round(duration * MS)
            marks.append(elapsed_ns)
    queue, dns_done, connect_done, tls_done, sent, first_byte, first_tok, done = marks
    chunks: tuple[Chunk, ...] = ()
    if first_tok is not None and done is not None:
        chunks = tuple(
            Chunk(t_ns=first_tok + (done - first_tok) * i // 9, chars=40, tokens=11)
            for i in range(10)
        )
    return RequestTrace(
        started_at=datetime(2025, 3, 14, 9, 30, tzinfo=UTC),
        t0_ns=10_000_000_000,
        url=ENDPOINT,
        model=model,
        dialect="openai-chat",
        http_version="HTTP/1.1",
        remote_ip="203.0.113.7",
        connection_id=1,
        new_connection=dns is not None,
        queue_done_ns=queue,
        dns_done_ns=dns_done,
        connect_done_ns=connect_done,
        tls_done_ns=tls_done,
        sent_ns=sent,
        first_byte_ns=first_byte,
        first_token_ns=first_tok,
        done_ns=done,
        status=200,
        chunks=chunks,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        output_tokens_exact=True,
    )


def run_samples(*, with_length: bool = True, failed: bool = True) -> list[Sample]:
    samples: list[Sample] = []
    for i in range(4):
        samples.append(Sample("network", make_trace(wait=360.0 + 15 * i), cold=True))
        samples.append(Sample("network", make_trace(dns=None, connect=None, tls=None)))
    if with_length:
        for tokens in (128, 512, 2048, 8192):
            for repeat in range(3):
                prefill = (300 + 0.12 * tokens + 0.00002 * tokens * tokens) * (0.92 + 0.06 * repeat)
                trace = make_trace(
                    dns=None, connect=None, tls=None, wait=prefill, prompt_tokens=tokens
                )
                samples.append(Sample("length", trace, target_prompt_tokens=tokens))
    for i in range(6):
        trace = make_trace(dns=None, connect=None, tls=None, wait=400.0 + 900.0 * (i % 3))
        samples.append(Sample("load", trace, concurrency=8))
    if failed:
        error = TraceError(ErrorKind.HTTP, Phase.WAIT, "rate limited <b>slow down</b>", 429)
        trace = make_trace(dns=None, connect=None, tls=None, first_token=None, stream=None)
        samples.append(Sample("load", _with_error(trace, error), concurrency=8))
    return [
        Sample(s.step, s.trace, s.target_prompt_tokens, s.concurrency, s.cold, i)
        for i, s in enumerate(samples)
    ]


def _with_error(trace: RequestTrace, error: TraceError) -> RequestTrace:
    return replace(trace, error=error, status=error.status, chunks=(), output_tokens=None)


CURVE = LengthCurve(
    points=tuple(
        LengthPoint(t, 300 + 0.12 * t + 0.00002 * t * t + 40, 3) for t in (128, 512, 2048, 8192)
    ),
    a_ms=340.0,
    b_ms_per_1k=120.0,
    c_ms_per_1k2=20.0,
    shape="super-linear",
)


def make_diagnosis(
    *, model: str = "qwen2.5-7b-instruct", length: LengthCurve | None = CURVE, failed: int = 1
) -> Diagnosis:
    return Diagnosis(
        run_id="run-2025-03-14-0930",
        endpoint=ENDPOINT,
        model=model,
        scenario=Scenario.CHAT,
        verdict=Verdict(Kind.INPUT_LENGTH, (Kind.QUEUEING, Kind.NETWORK_SETUP), 0.86),
        shares_ms={
            Kind.INPUT_LENGTH: 1480.0,
            Kind.QUEUEING: 610.0,
            Kind.NETWORK_SETUP: 77.0,
            Kind.DECODE: 1200.0,
        },
        findings=(
            Finding(
                Kind.INPUT_LENGTH,
                "Prefill grows with the prompt",
                "TTFT at 8K ÷ TTFT at 128 tokens ≥ 5×",
                {"ratio_long_short": 6.3, "ttft_short_ms": 337.0, "ttft_long_ms": 2124.5, "n": 12},
                1480.0,
                0.9,
            ),
            Finding(
                Kind.QUEUEING,
                "Waits follow load, not length",
                "TTFB spread under load > 3× the idle spread",
                {"idle_p90_ms": 420.0, "load_p90_ms": 2210.0, "concurrency": 8},
                610.0,
                0.7,
            ),
        ),
        remedies=(
            Remedy(
                "trim_context",
                "Trim the conversation to the last 2K tokens",
                Kind.INPUT_LENGTH,
                "messages = trim_to_tokens(messages, max_tokens=2048)",
                1150.0,
            ),
            Remedy(
                "smaller_model",
                "Try a smaller model of the same family",
                Kind.INPUT_LENGTH,
                'client.chat.completions.create(model="qwen2.5-1.5b-instruct", ...)',
                None,
                "Lower answer quality; check it on your own prompts first.",
            ),
            Remedy(
                "keepalive",
                "Reuse connections",
                Kind.NETWORK_SETUP,
                "client = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=20))",
                77.0,
            ),
        ),
        network={"dns_ms": 12.0, "connect_ms": 24.0, "tls_ms": 41.0, "rtt_ms": None},
        length=length,
        load={"idle_p50_ms": 395.0, "load_p50_ms": 1310.0, "concurrency": 8.0},
        notes=(StepNote("load", "Stopped at concurrency 8: the budget of 40 requests ran out."),),
        requests=31,
        failed=failed,
    )


def test_kind_names_are_human() -> None:
    assert kind_name(Kind.INPUT_LENGTH) == "Input length (prefill grows with the prompt)"


def test_page_shows_verdict_findings_and_remedies() -> None:
    page = render_html(make_diagnosis(), run_samples())
    assert page.startswith("<!DOCTYPE html>")
    assert "Input length" in page and "prefill grows with the prompt" in page
    assert "86 %" in page
    assert "Server queueing" in page
    for title in ("Prefill grows with the prompt", "Waits follow load, not length"):
        assert title in page
    assert "TTFT at 8K ÷ TTFT at 128 tokens ≥ 5×" in page
    assert "<code>ratio_long_short</code></th><td>6.3</td>" in page
    assert "2.12 s" in page
    positions = [
        page.index(t)
        for t in (
            "Trim the conversation to the last 2K tokens",
            "Try a smaller model of the same family",
            "Reuse connections",
        )
    ]
    assert positions == sorted(positions)
    assert "<pre><code>messages = trim_to_tokens(messages, max_tokens=2048)</code></pre>" in page
    assert "Lower answer quality" in page
    assert "Stopped at concurrency 8" in page
    assert "31 (1 failed)" in page
    assert "2025-03-14 09:30 UTC" in page


def test_share_bar_widths_follow_the_shares() -> None:
    page = render_html(make_diagnosis(), run_samples())
    widths = dict(re.findall(r'class="share k-(\w+)" style="width:([\d.]+)%"', page))
    total = 1480.0 + 610.0 + 77.0 + 1200.0
    assert float(widths["input_length"]) == pytest.approx(1480.0 / total * 100, abs=0.01)
    assert float(widths["network_setup"]) == pytest.approx(77.0 / total * 100, abs=0.01)


def test_three_plots_with_length_samples_two_without() -> None:
    assert render_html(make_diagnosis(), run_samples()).count("<svg") == 3
    page = render_html(make_diagnosis(length=None), run_samples(with_length=False))
    assert page.count("<svg") == 2


def test_length_plot_draws_points_and_the_fitted_curve() -> None:
    page = render_html(make_diagnosis(), run_samples())
    assert page.count('<circle class="pt-request"') == 12
    assert page.count('<circle class="pt-median"') == 4
    assert page.count('<polyline class="fit"') == 1
    assert "super-linear" in page


def test_nothing_is_fetched_from_the_network() -> None:
    page = render_html(make_diagnosis(), run_samples())
    without_endpoint = page.replace(ENDPOINT, "")
    assert "http://" not in without_endpoint
    assert "https://" not in without_endpoint
    assert re.search(r"\b(src|href)\s*=", page) is None
    assert "url(" not in page
    assert "@import" not in page
    assert "<script" not in page.lower()
    assert "<link" not in page.lower()
    assert "<img" not in page.lower()


def test_strings_from_the_data_are_escaped() -> None:
    model = '<script>alert("x")</script>'
    endpoint = 'https://evil.example/"><img src=x onerror=alert(1)>'
    diagnosis = make_diagnosis(model=model)
    diagnosis = Diagnosis(**{**diagnosis.__dict__, "endpoint": endpoint})
    samples = run_samples()
    page = render_html(diagnosis, samples)
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<b>slow down</b>" not in page
    assert "rate limited &lt;b&gt;slow down&lt;/b&gt;" in page


def test_no_samples_do_not_crash() -> None:
    page = render_html(make_diagnosis(length=None, failed=0), [])
    assert page.count("<svg") == 0
    assert "No request was recorded." in page
    assert "No successful request" in page
    assert "no requests recorded" in page


def test_failed_only_samples_show_a_message_instead_of_a_histogram() -> None:
    error = TraceError(ErrorKind.CONNECT, Phase.CONNECT, "connection refused")
    trace = make_trace(tls=None, send=0, wait=0, first_token=None, stream=None)
    samples = [Sample("network", _with_error(trace, error), index=i) for i in range(3)]
    length_error = TraceError(ErrorKind.TIMEOUT, Phase.WAIT, "no first byte in 30 s")
    samples.append(Sample("length", _with_error(make_trace(), length_error), 8192))
    page = render_html(make_diagnosis(length=None, failed=4), samples)
    assert page.count("<svg") == 1
    assert "No successful request: there is no time to first token to show." in page
    assert "No successful request at a measured prompt length." in page
    assert page.count("✕ connect") == 3
    assert "✕ timeout:wait" in page


@pytest.mark.parametrize("count", [1, 5])
def test_identical_ttfts_still_make_a_histogram(count: int) -> None:
    trace = make_trace(dns=None, connect=None, tls=None)
    samples = [Sample("load", trace, index=i) for i in range(count)]
    page = render_html(make_diagnosis(length=None, failed=0), samples)
    assert page.count("<svg") == 2
    assert re.search(r'<rect class="bar st-0"[^>]*height="[1-9]', page)
    assert "p50 " in page and "p95 " in page


class _RowRects(HTMLParser):
    """Collects the waterfall's segment rects by row: (phase, x, width)."""

    def __init__(self) -> None:
        super().__init__()
        self.row: str | None = None
        self.rows: dict[str, list[tuple[str, float, float]]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "g" and values.get("data-row") is not None:
            self.row = values["data-row"]
        elif tag == "rect" and self.row is not None and values.get("data-phase"):
            x, width = float(values["x"] or 0), float(values["width"] or 0)
            self.rows.setdefault(self.row, []).append((values["data-phase"] or "", x, width))

    def handle_endtag(self, tag: str) -> None:
        if tag == "g":
            self.row = None


def test_waterfall_segments_are_proportional_to_phase_durations() -> None:
    trace = make_trace(dns=12.0, connect=24.0, tls=41.0, send=2.5, wait=380.0, first_token=35.0)
    samples = [Sample("network", trace, cold=True), *run_samples(with_length=False)]
    parser = _RowRects()
    parser.feed(render_html(make_diagnosis(length=None), samples))
    row = parser.rows["0"]
    assert [phase for phase, _, _ in row] == [
        "queue",
        "dns",
        "connect",
        "tls",
        "send",
        "wait",
        "first_token",
        "stream",
    ]
    durations = {
        "queue": trace.queue_ms,
        "dns": trace.dns_ms,
        "connect": trace.connect_ms,
        "tls": trace.tls_ms,
        "send": trace.send_ms,
        "wait": trace.wait_ms,
        "first_token": 35.0,
        "stream": trace.stream_ms,
    }
    px_per_ms = row[5][2] / 380.0
    for phase, _, width in row:
        duration = durations[phase]
        assert duration is not None
        assert width == pytest.approx(duration * px_per_ms, abs=0.002)
    for (_, x, width), (_, next_x, _) in itertools.pairwise(row):
        assert x + width == pytest.approx(next_x, abs=0.002)
    reused = parser.rows["2"]
    assert [phase for phase, _, _ in reused][:2] == ["queue", "send"]


def test_waterfall_caps_rows_and_says_how_many_were_left_out() -> None:
    samples = [
        Sample("load", make_trace(dns=None, connect=None, tls=None), index=i) for i in range(150)
    ]
    page = render_html(make_diagnosis(length=None, failed=0), samples)
    parser = _RowRects()
    parser.feed(page)
    assert len(parser.rows) == MAX_ROWS
    assert "60 of 150 requests shown" in page
    assert "90 of 150 requests left out" in page


def test_phase_segments_skip_unmeasured_phases() -> None:
    trace = make_trace(dns=None, connect=None, tls=None, first_token=None, stream=None)
    assert [s.phase for s in phase_segments(trace)] == ["queue", "send", "wait"]


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (0, 2124.5, [0, 500, 1000, 1500, 2000, 2500]),
        (0, 1, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (0, 9000, [0, 2000, 4000, 6000, 8000, 10000]),
        (120, 480, [100, 200, 300, 400, 500]),
        (5, 5, [5, 6, 7, 8, 9, 10]),
    ],
)
def test_nice_ticks(lo: float, hi: float, expected: list[float]) -> None:
    assert nice_ticks(lo, hi) == pytest.approx(expected)


def test_tick_labels_use_one_unit() -> None:
    assert ms_tick_labels([0, 500, 1000, 1500]) == ["0 s", "0.5 s", "1 s", "1.5 s"]
    assert ms_tick_labels([0, 20, 40]) == ["0 ms", "20 ms", "40 ms"]
    assert ms_tick_labels([0, 0.25, 0.5]) == ["0 µs", "250 µs", "500 µs"]
