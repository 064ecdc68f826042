"""Terminal views and progress bars: the numbers of the diagnosis and the probe, at 80 and
120 columns, colour only on a terminal and never with ``NO_COLOR``."""

from __future__ import annotations

import dataclasses
import io
import os
import pty
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

import pytest

from latdoc import (
    ErrorKind,
    Phase,
    Priorities,
    Scenario,
    TraceError,
    make_console,
    parse_priorities,
    render_diagnosis,
    render_summary,
    render_text,
    render_waterfall,
)
from latdoc.analysis.repeats import summarize
from latdoc.model import CostChange, Effects, QualityRisk
from latdoc.report import ProgressBars
from latdoc.report.names import format_ms, format_value
from report_samples import make_diagnosis, make_trace, with_error

WIDTHS = [80, 120]
ANSI = re.compile(r"\x1b\[")


def assert_fits(text: str, width: int) -> None:
    for line in text.splitlines():
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}"


@pytest.fixture(autouse=True)
def _no_colour_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize("width", WIDTHS)
def test_diagnosis_shows_every_number_within_the_width(width: int) -> None:
    d = make_diagnosis()
    text = render_text(render_diagnosis(d), width)
    assert_fits(text, width)
    flat = " ".join(text.split())
    assert "31 requests to https://api.example.com/v1/chat/completions" in flat
    assert "(model qwen2.5-7b-instruct), 1 failed" in flat
    assert "Verdict: Input length (prefill grows with the prompt) confidence 0.86" in flat
    assert "Contributing: queueing, network_setup" in flat
    for kind, ms in d.shares_ms.items():
        assert re.search(rf"{kind}\s+{re.escape(format_ms(ms))}", text)
    for step in ("Step 1 — network", "Step 2 — input length", "Step 3 — fluctuation and load"):
        assert step in text
    assert d.length is not None
    for p in d.length.points:
        assert f"{p.prompt_tokens} → {format_ms(p.ttft_ms)}" in text
    assert "curve super-linear" in flat
    for f in d.findings:
        assert f.title in text
        assert f"adds ~{format_ms(f.share_ms)}, confidence {f.confidence:.2f}" in flat
        assert f"rule: {f.rule}" in flat
        for key, value in f.evidence.items():
            # a name and its value are never split across lines
            assert f"{key} {format_value(key, value)}" in text
    for i, r in enumerate(d.remedies, 1):
        assert f"{i}. {r.title}" in text
        assert " ".join(r.change.split()) in flat
    assert "saves 1.15 s (95% CI 1.02 s … 1.29 s), fitted from the length curve" in flat
    assert "saves 77.0 ms (95% CI 61.0 ms … 90.0 ms), measured in this run" in flat
    assert (
        "not measured here — measure it: latdoc verify "
        "https://api.example.com/v1/chat/completions --model qwen2.5-7b-instruct "
        "--remedy model --alt-model NAME" in flat
    )
    assert "trade-off: Lower answer quality" in flat
    assert "load: Stopped at concurrency 8: the budget of 40 requests ran out." in flat
    assert not re.search(r"\S…", text), "a line was cut short"


def test_diagnosis_order_is_verdict_steps_findings_remedies() -> None:
    text = render_text(render_diagnosis(make_diagnosis()), 120)
    marks = [
        "Verdict:",
        "What each kind adds",
        "Step 1",
        "Findings:",
        "Remedies, ranked",
        "Left out",
    ]
    positions = [text.index(m) for m in marks]
    assert positions == sorted(positions)


def test_share_bars_are_to_scale() -> None:
    text = render_text(render_diagnosis(make_diagnosis()), 120)
    bars = {
        m.group(1): len(m.group(2).rstrip())
        for m in re.finditer(r"^\s+(\w+)\s+[\d.]+ m?s\s+([█▉▊▋▌▍▎▏]+)", text, re.M)
    }
    assert bars["input_length"] == 32
    assert bars["decode"] == round(32 * 1200 / 1480)
    assert bars["network_setup"] <= 2


@pytest.mark.parametrize("width", WIDTHS)
def test_waterfall_shows_each_phase_its_duration_and_its_mark(width: int) -> None:
    trace = make_trace(dns=12.0, connect=24.0, tls=41.0, send=2.5, wait=380.0, first_token=35.0)
    text = render_text(render_waterfall(trace), width)
    assert_fits(text, width)
    rows = {
        "DNS": (12.0, "dns"),
        "TCP": (24.0, "connect"),
        "TLS": (41.0, "tls"),
        "Send": (2.5, "sent"),
        "Server wait": (380.0, "first byte"),
        "First token": (35.0, "first token"),
        "Streaming": (1200.0, "total"),
    }
    done = 0.15
    for label, (ms, mark) in rows.items():
        done += ms
        line = next(line for line in text.splitlines() if line.strip().startswith(label))
        assert format_ms(ms) in line
        assert format_ms(done) in line
        assert mark in line
    assert "POST https://api.example.com/v1/chat/completions" in text
    assert "new connection #1 to 203.0.113.7" in " ".join(text.split())
    assert "TTFT 494.6 ms" in text
    assert "100 output tokens (usage)" in text


def test_waterfall_without_tls_has_no_tls_row_and_says_why_a_request_failed() -> None:
    trace = make_trace(tls=None, first_token=None, stream=None)
    error = TraceError(ErrorKind.HTTP, Phase.WAIT, "rate limited [slow down]", 429)
    text = render_text(render_waterfall(with_error(trace, error)), 80)
    assert "TLS" not in text
    assert "failed: http:429 during wait: rate limited [slow down]" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_summary_is_hyperfine_style(width: int) -> None:
    cold = make_trace(wait=300.0)
    warm = [make_trace(dns=None, connect=None, tls=None, wait=w) for w in (280.0, 300.0, 320.0)]
    error = TraceError(ErrorKind.TIMEOUT, Phase.WAIT, "no first byte")
    failed = with_error(make_trace(dns=None, connect=None, tls=None), error)
    summary = summarize([cold, *warm, failed])
    text = render_text(render_summary(summary), width)
    assert_fits(text, width)
    assert "5 requests: 4 ok, 1 failed" in text
    assert "Cold (new connection, n = 1)" in text
    assert "Warm (reused connection, n = 3)" in text
    assert summary.warm is not None
    wait = summary.warm.get("Server wait")
    assert wait is not None and wait.stdev is not None
    warm_part = text[text.index("Warm") :]
    line = next(line for line in warm_part.splitlines() if line.strip().startswith("Server wait"))
    assert re.search(r"300\.0 ms\s+± 20\.0 ms\s+280\.0 ms … 320\.0 ms", line), line
    assert "mean" in text and "± σ" in text and "min … max" in text
    cold_part = text[text.index("Cold") : text.index("Warm")]
    assert "DNS" in cold_part and "±" not in cold_part
    assert "DNS" not in text[text.index("Warm") : text.index("Keep-alive")]
    assert "Keep-alive saves 77.0 ms of DNS+TCP+TLS per request" in " ".join(text.split())


@contextmanager
def terminal() -> Iterator[tuple[TextIO, int]]:
    """A stream that is a real terminal (a pseudo-terminal), and the fd to read it from."""
    leader, follower = pty.openpty()
    stream = os.fdopen(follower, "w", encoding="utf-8")
    try:
        yield stream, leader
    finally:
        stream.close()
        os.close(leader)


def read_terminal(leader: int) -> str:
    chunks = []
    os.set_blocking(leader, False)
    while True:
        try:
            chunk = os.read(leader, 65536)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def test_colour_only_on_a_terminal_and_never_with_no_color(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    piped = io.StringIO()
    make_console(piped, width=100).print(render_diagnosis(make_diagnosis()))
    assert "Verdict" in piped.getvalue()
    assert not ANSI.search(piped.getvalue())

    with terminal() as (stream, leader):
        make_console(stream, width=100).print(render_diagnosis(make_diagnosis()))
        stream.flush()
        coloured = read_terminal(leader)
    assert "Verdict" in coloured and ANSI.search(coloured)

    monkeypatch.setenv("NO_COLOR", "1")
    with terminal() as (stream, leader):
        make_console(stream, width=100).print(render_diagnosis(make_diagnosis()))
        stream.flush()
        plain = read_terminal(leader)
    assert "Verdict" in plain
    assert not ANSI.search(plain)


def test_progress_is_silent_off_a_terminal_but_messages_still_print() -> None:
    stream = io.StringIO()
    bars = ProgressBars(stream)
    bars("network", 1, 4)
    bars("network", 4, 4)
    bars.clear()
    bars.message("Error: request 2/4: http:429 during wait: slow down")
    bars.close()
    assert stream.getvalue() == "Error: request 2/4: http:429 during wait: slow down\n"


def test_progress_on_a_terminal_draws_a_bar_per_stage_and_prints_above() -> None:
    clock = iter(float(t) for t in range(1000))
    with terminal() as (stream, leader):
        bars = ProgressBars(stream, get_time=lambda: next(clock))
        bars("network", 1, 4)
        bars("network", 4, 4)
        bars("length", 2, 5)
        bars.message("Error: request 7: timeout:wait during wait: no first byte")
        bars.close()
        stream.flush()
        shown = read_terminal(leader)
    assert "network" in shown and "4/4" in shown
    assert "length" in shown and "2/5" in shown
    assert "Error: request 7: timeout:wait during wait: no first byte" in shown


def test_progress_as_a_block_keeps_its_bars_or_erases_them_when_transient() -> None:
    erase = "\x1b[1A\x1b[2K"
    clock = iter(float(t) for t in range(1000))
    for transient in (False, True):
        with terminal() as (stream, leader):
            with ProgressBars(stream, transient=transient, get_time=lambda: next(clock)) as bars:
                bars("network", 1, 4)
            stream.flush()
            shown = read_terminal(leader)
        assert "1/4" in shown
        assert shown.endswith(erase) is transient


def test_progress_disabled_on_a_terminal_stays_silent() -> None:
    with terminal() as (stream, leader):
        bars = ProgressBars(stream, enabled=False)
        bars("requests", 1, 2)
        bars.clear()
        stream.flush()
        assert read_terminal(leader) == ""


def test_the_remedies_say_what_they_were_ranked_for_and_what_they_trade() -> None:
    max_tokens = Effects(CostChange.LOWER, QualityRisk.MAY_CHANGE, "fewer output tokens", "cut")
    d = make_diagnosis()
    d = dataclasses.replace(
        d,
        priorities=parse_priorities("cost=2,latency=1,quality=0"),
        remedies=(
            dataclasses.replace(d.remedies[0], effects=max_tokens),
            dataclasses.replace(d.remedies[-1], effects=Effects()),
        ),
    )
    text = " ".join(render_text(render_diagnosis(d), 120).split())
    assert "Ranked for: cost (2) > latency (1); quality not read (--priorities)" in text
    assert "effects: cost lower: fewer output tokens; may change answers: cut" in text
    assert text.count("effects:") == 1  # a remedy that changes neither says nothing
    preset = dataclasses.replace(d, priorities=Priorities.preset(Scenario.LONGDOC))
    text = " ".join(render_text(render_diagnosis(preset), 120).split())
    assert "Ranked for: quality > latency > cost (--scenario longdoc)" in text
