"""The HTML report: self-contained, escaped, with plots that match the numbers."""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest

from latdoc import (
    Diagnosis,
    ErrorKind,
    Kind,
    Phase,
    Priorities,
    Sample,
    Scenario,
    TraceError,
    render_html,
)
from latdoc.model import CostChange, Effects
from latdoc.report._plot_data import (
    MAX_ROWS,
    ms_tick_labels,
    phase_segments,
    pick_rows,
    row_label,
    token_tick_label,
)
from latdoc.report._plots import histogram_edges
from latdoc.report.names import kind_name
from report_samples import ENDPOINT, make_diagnosis, make_trace, run_samples, with_error

_SHAPE = re.compile(r'<g id="([\w-]+)">\s*<path d="([^"]*)"')


def shapes(page: str) -> dict[str, list[tuple[float, float]]]:
    """The drawn shapes that carry an id: their outline's points, in SVG units."""
    return {
        gid: [(float(x), float(y)) for x, y in re.findall(r"([-\d.]+) ([-\d.]+)", d)]
        for gid, d in _SHAPE.findall(page)
    }


def extent(points: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    """(left, width, top, height) of an outline."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    return min(xs), max(xs) - min(xs), min(ys), max(ys) - min(ys)


@pytest.fixture(scope="module")
def page() -> str:
    """The page of the sample diagnosis and its samples: rendered once for every test that
    reads it (a page is a string, and the same inputs give the same page)."""
    return render_html(make_diagnosis(), run_samples())


def test_kind_names_are_human() -> None:
    assert kind_name(Kind.INPUT_LENGTH) == "Input length (prefill grows with the prompt)"


def test_page_shows_verdict_findings_and_remedies(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert "Input length" in page and "prefill grows with the prompt" in page
    assert "86 %" in page
    assert "Server queueing" in page
    for title in ("Prefill grows with the prompt", "Waits follow load, not length"):
        assert title in page
    assert "TTFT at 8K ÷ TTFT at 128 tokens ≥ 5×" in page
    assert "<tr><th><code>ratio_long_short</code></th><td>6.3</td></tr>" in page
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
    assert "31 requests, 1 failed" in page
    assert "2025-03-14 09:30 UTC" in page
    assert "<h2>Measurements</h2>" in page and "not measured" in page


def test_share_bar_widths_follow_the_shares(page: str) -> None:
    widths = dict(re.findall(r'class="share k-(\w+)" style="width:([\d.]+)%"', page))
    total = 1480.0 + 610.0 + 77.0 + 1200.0
    assert float(widths["input_length"]) == pytest.approx(1480.0 / total * 100, abs=0.01)
    assert float(widths["network_setup"]) == pytest.approx(77.0 / total * 100, abs=0.01)
    assert "3.37 s in all" in page


def test_three_plots_with_length_samples_two_without(page: str) -> None:
    assert page.count("<svg") == 3
    without = render_html(make_diagnosis(length=None), run_samples(with_length=False))
    assert without.count("<svg") == 2
    assert 'aria-label="Time to first token against prompt length"' not in without


def test_length_plot_draws_points_medians_and_the_fitted_curve(page: str) -> None:
    assert make_diagnosis().length is not None
    requests = page[page.index('<g id="length-requests">') :]
    requests = requests[: requests.index("</g>\n   </g>")]
    assert requests.count("<use ") == 12
    medians = page[page.index('<g id="length-medians">') :]
    medians = medians[: medians.index("</g>\n   </g>")]
    assert medians.count("<use ") == 4
    fit = shapes(page)["length-fit"]
    assert len(fit) == 81
    # The drawn curve has the fitted shape: a + b·k + c·k² is convex here, so the
    # middle of the line lies below the chord between its ends (SVG y grows down).
    (x0, y0), (x1, y1) = fit[0], fit[-1]
    xm, ym = fit[40]
    chord = y0 + (y1 - y0) * (xm - x0) / (x1 - x0)
    assert ym > chord
    assert "super-linear" in page


def test_nothing_is_fetched_from_the_network(page: str) -> None:
    without_endpoint = page.replace(ENDPOINT, "")
    # The SVG namespace names are identifiers, never fetched.
    urls = set(re.findall(r"https?://[^\s\"'<>]+", without_endpoint))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    # Every reference points inside the page: glyphs, markers and clip paths by #id.
    assert re.findall(r"\b(?:src|href)\s*=\s*\"([^\"]*)\"", page) == [] or all(
        ref.startswith("#") for ref in re.findall(r"\bhref=\"([^\"]*)\"", page)
    )
    assert re.search(r"\bsrc\s*=", page) is None
    assert all(ref.startswith("#") for ref in re.findall(r"url\(([^)]*)\)", page))
    assert "@import" not in page
    assert "@font-face" not in page
    assert "<script" not in page.lower()
    assert "<link" not in page.lower()
    assert "<img" not in page.lower()
    assert "<image" not in page.lower()


def test_strings_from_the_data_are_escaped() -> None:
    model = '<script>alert("x")</script>'
    endpoint = 'https://evil.example/"><img src=x onerror=alert(1)>'
    diagnosis = make_diagnosis(model=model)
    diagnosis = Diagnosis(**{**diagnosis.__dict__, "endpoint": endpoint})
    page = render_html(diagnosis, run_samples())
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_error_messages_are_listed_and_escaped(page: str) -> None:
    assert "<b>slow down</b>" not in page
    assert "<code>http:429 during wait: rate limited &lt;b&gt;slow down&lt;/b&gt;</code>" in page


def test_no_samples_do_not_crash() -> None:
    page = render_html(make_diagnosis(length=None, failed=0), [])
    assert page.count("<svg") == 0
    assert "No request was recorded." in page
    assert "No successful request" in page
    assert "no requests recorded" in page


def test_failed_only_samples_show_a_message_instead_of_a_histogram() -> None:
    error = TraceError(ErrorKind.CONNECT, Phase.CONNECT, "connection refused")
    trace = make_trace(tls=None, send=0, wait=0, first_token=None, stream=None)
    samples = [Sample("network", with_error(trace, error), index=i) for i in range(3)]
    length_error = TraceError(ErrorKind.TIMEOUT, Phase.WAIT, "no first byte in 30 s")
    samples.append(Sample("length", with_error(make_trace(), length_error), 8192))
    page = render_html(make_diagnosis(length=None, failed=4), samples)
    assert page.count("<svg") == 1
    assert "No successful request: there is no time to first token to show." in page
    assert "No successful request at a measured prompt length." in page
    assert "4 failed requests marked ✕ (connect × 3, timeout:wait × 1)" in page
    drawn = shapes(page)
    for row in range(4):
        assert f"wf-band-{row}" in drawn
        assert f'<g id="wf-fail-{row}">' in page
    labels = [row_label(p, s) for p, s in pick_rows(samples)]
    assert labels[-1] == "#4 length 128 tok ✕ timeout:wait"


def test_failed_requests_are_marked_and_ok_ones_are_not(page: str) -> None:
    failed_rows = {int(m) for m in re.findall(r'<g id="wf-fail-(\d+)">', page)}
    assert failed_rows == {len(run_samples()) - 1}
    assert "1 failed request marked ✕ (http:429 × 1)" in page


@pytest.mark.parametrize("count", [1, 5])
def test_identical_ttfts_still_make_a_histogram(count: int) -> None:
    trace = make_trace(dns=None, connect=None, tls=None)
    samples = [Sample("load", trace, index=i) for i in range(count)]
    page = render_html(make_diagnosis(length=None, failed=0), samples)
    assert page.count("<svg") == 2
    bars = {gid: extent(p) for gid, p in shapes(page).items() if gid.startswith("hist-")}
    assert any(width > 1 and height > 1 for _, width, _, height in bars.values())
    assert "p50 " in page and "p95 " in page
    assert '<g id="ttft-p50">' in page and '<g id="ttft-p95">' in page


def test_histogram_bars_count_the_requests(page: str) -> None:
    samples = run_samples()
    bars = {gid: extent(p) for gid, p in shapes(page).items() if gid.startswith("hist-")}
    # Stacked: the tallest stack is the fullest bin; heights are proportional to counts,
    # so the sum of all bar heights over the unit height is the number of ok requests.
    heights = [h for _, _, _, h in bars.values() if h > 0]
    unit = min(heights)
    assert sum(round(h / unit) for h in heights) == sum(1 for s in samples if s.trace.ok)


def test_waterfall_segments_are_proportional_to_phase_durations() -> None:
    trace = make_trace(dns=12.0, connect=24.0, tls=41.0, send=2.5, wait=380.0, first_token=35.0)
    samples = [Sample("network", trace, cold=True), *run_samples(with_length=False)]
    drawn = shapes(render_html(make_diagnosis(length=None), samples))
    phases = ["queue", "dns", "connect", "tls", "send", "wait", "first_token", "stream"]
    row = [(phase, extent(drawn[f"wf-0-{phase}"])) for phase in phases]
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
    px_per_ms = row[5][1][1] / 380.0
    for phase, (_, width, _, _) in row:
        duration = durations[phase]
        assert duration is not None
        assert width == pytest.approx(duration * px_per_ms, abs=0.01)
    for (_, (x, width, _, _)), (_, (next_x, _, _, _)) in itertools.pairwise(row):
        assert x + width == pytest.approx(next_x, abs=0.01)
    reused = sorted(gid.split("-", 2)[2] for gid in drawn if gid.startswith("wf-2-"))
    assert reused == sorted(["queue", "send", "wait", "first_token", "stream"])


def test_waterfall_caps_rows_and_says_how_many_were_left_out() -> None:
    samples = [
        Sample("load", make_trace(dns=None, connect=None, tls=None), index=i) for i in range(150)
    ]
    page = render_html(make_diagnosis(length=None, failed=0), samples)
    rows = {int(gid.split("-")[1]) for gid in shapes(page) if re.fullmatch(r"wf-\d+-\w+", gid)}
    assert rows == set(range(MAX_ROWS))
    assert "60 of 150 requests shown" in page
    assert "90 of 150 requests left out" in page
    assert [p for p, _ in pick_rows(samples)][:3] == [1, 4, 6]
    assert [p for p, _ in pick_rows(samples)][-1] == 150


def test_phase_segments_skip_unmeasured_phases() -> None:
    trace = make_trace(dns=None, connect=None, tls=None, first_token=None, stream=None)
    assert [s.phase for s in phase_segments(trace)] == ["queue", "send", "wait"]


def test_phase_segments_draw_the_client_delay_where_it_happened() -> None:
    trace = dataclasses.replace(
        make_trace(dns=None, connect=None, tls=None, first_token=None, stream=None),
        pool_granted_ns=0,
    )
    assert trace.queue_done_ns is not None and trace.sent_ns is not None
    trace = dataclasses.replace(
        trace,
        pool_granted_ns=trace.queue_done_ns // 2,
        write_start_ns=(trace.queue_done_ns + trace.sent_ns) // 2,
    )
    segments = phase_segments(trace)
    assert [s.phase for s in segments] == ["queue", "client", "client", "send", "wait"]
    client = sum(s.duration_ms for s in segments if s.phase == "client")
    assert client == pytest.approx(trace.client_delay_ms)


def test_row_labels_say_step_length_and_load() -> None:
    samples = run_samples()
    labels = [row_label(p, s) for p, s in pick_rows(samples)]
    assert labels[0] == "#1 network"
    assert labels[8] == "#9 length 128 tok"
    assert labels[-2] == "#26 load ×8"
    assert labels[-1] == "#27 load ×8 ✕ http:429"


def test_tick_labels_use_one_unit() -> None:
    assert ms_tick_labels([0, 500, 1000, 1500]) == ["0 s", "0.5 s", "1 s", "1.5 s"]
    assert ms_tick_labels([0, 20, 40]) == ["0 ms", "20 ms", "40 ms"]
    assert ms_tick_labels([0, 0.25, 0.5]) == ["0 µs", "250 µs", "500 µs"]
    assert [token_tick_label(t) for t in (2048, 32768, 1000)] == ["2K", "32K", "1K"]
    assert [token_tick_label(t) for t in (0, 512, 2000, 2500, 32000)] == [
        "0",
        "512",
        "2K",
        "2.5K",
        "32K",
    ]


@pytest.mark.parametrize(
    "values", [[400.0] * 5, [0.3], [337.0, 500.0, 900.0, 2124.5], [float(i) for i in range(200)]]
)
def test_histogram_edges_cover_every_value_with_round_bins(values: list[float]) -> None:
    edges = histogram_edges(values)
    assert edges[0] <= min(values) and edges[-1] >= max(values)
    assert edges[0] >= 0
    widths = {round(b - a, 9) for a, b in itertools.pairwise(edges)}
    assert len(widths) == 1 and widths.pop() > 0
    assert 2 <= len(edges) <= 26


def test_page_is_the_same_twice(page: str) -> None:
    """Rendered again from inputs made anew, after whatever other pages the module drew
    since the first."""
    assert render_html(make_diagnosis(), run_samples()) == page


def test_the_page_says_what_the_remedies_were_ranked_for_and_what_they_trade() -> None:
    d = make_diagnosis()
    effects = Effects(CostChange.HIGHER, cost_why="a dearer model")
    d = dataclasses.replace(
        d,
        priorities=Priorities.preset(Scenario.BATCH),
        remedies=(dataclasses.replace(d.remedies[0], effects=effects),),
    )
    page = render_html(d, run_samples())
    assert "<dt>Ranked for</dt><dd>cost &gt; latency &gt; quality (--scenario batch)</dd>" in page
    assert '<p class="muted effects">cost higher: a dearer model</p>' in page
