"""What a load report leads with: ``--find-max``'s answer where it was asked for, and a
knee sentence that says where the p95 queued when the median did not, so the headline
never denies the plot beneath it. Built from level statistics, nothing sent."""

from __future__ import annotations

import json
import re

from latdoc import render_text
from latdoc.features.load import render_load, render_load_html
from latdoc.features.load.analysis import (
    FindMax,
    LevelStats,
    LevelWindow,
    LoadAnalysis,
    Objective,
    Percentiles,
    Probe,
    Slo,
    find_knee,
    find_tail_knee,
    findings,
)
from latdoc.features.load.render import load_to_dict

SECOND = 10**9
P95_400 = Objective("ttft", 0.95, 400.0)


def _level(streams: int, p50_ms: float, p95_ms: float) -> LevelStats:
    """A closed-loop level whose server-side TTFT has this p50 and p95."""
    ttft = Percentiles(p50_ms, p95_ms, p95_ms, p50_ms)
    window = LevelWindow(streams, streams, None, streams * SECOND, (streams + 1) * SECOND)
    return LevelStats(window, 20, 0, ttft, None, None, None, float(streams), 16.0 * streams,
                      float(streams), None, None, None, server_ttft_ms=ttft)  # fmt: skip


def _sweep(*levels: tuple[int, float, float]) -> LoadAnalysis:
    stats = tuple(_level(*lv) for lv in levels)
    return LoadAnalysis(stats, find_knee(stats), None, None, Slo())


# Six slots: at 7 streams one request in seven waits a whole answer for a slot, so the
# p95 jumps while the median stays at the prefill.
SIX_SLOTS = _sweep((1, 31.0, 35.0), (2, 32.0, 35.0), (4, 33.0, 36.0), (6, 33.0, 36.0),
                   (7, 35.0, 470.0), (8, 35.0, 515.0))  # fmt: skip


def _probe(streams: float, passed: bool, decided: bool = True) -> Probe:
    return Probe(streams, 1, 40, 0, (), passed, decided, False)


def _found(*undecided: float) -> FindMax:
    probes = tuple(_probe(s, s <= 6, s not in undecided) for s in (1.0, 2.0, 4.0, 8.0, 6.0, 7.0))
    return FindMax((P95_400,), probes, 6.0, 7.0, "queueing", 256.0)


def _text(analysis: LoadAnalysis, found: FindMax | None = None) -> str:
    shown = render_load(analysis, title="lab under load", found=found)
    return " ".join(render_text(shown, width=200).split())


def test_a_tail_that_queues_under_a_flat_median_is_said_not_denied() -> None:
    assert SIX_SLOTS.knee is None
    assert find_tail_knee(SIX_SLOTS.levels) is SIX_SLOTS.levels[4]
    knee = findings(SIX_SLOTS)[0]
    assert knee.startswith(
        "No knee in the median: server TTFT p50 (from the wire) stayed below 1.5×"
    )
    assert "The p95 did not: it rose from 36.0 ms at 6 to 470.0 ms at 7, 13.4× the " in knee
    assert knee.endswith("some requests wait for the server from 7 on.")
    assert load_to_dict(SIX_SLOTS)["tail_knee"] == "7"


def test_a_flat_tail_leaves_the_knee_sentence_as_it_was() -> None:
    flat = _sweep((1, 31.0, 35.0), (2, 32.0, 40.0), (4, 33.0, 90.0))
    assert find_tail_knee(flat.levels) is None
    assert findings(flat)[0] == (
        "No knee: server TTFT p50 (from the wire) stayed below 1.5× or within 100 ms of the "
        "31.0 ms at 1 at every level."
    )


def test_a_tail_that_queues_before_the_knee_is_said_after_it() -> None:
    later = _sweep((1, 31.0, 35.0), (4, 33.0, 36.0), (7, 35.0, 470.0), (12, 300.0, 600.0))
    assert later.knee is later.levels[3]
    knee = findings(later)[0]
    assert knee.startswith(
        "Knee at 12: server TTFT p50 (from the wire) 300.0 ms, 9.7× the 31.0 ms at 1"
    )
    assert "The p95 queued sooner: it rose from 36.0 ms at 4 to 470.0 ms at 7" in knee
    together = _sweep((1, 31.0, 35.0), (4, 33.0, 36.0), (7, 300.0, 600.0))
    assert "p95" not in findings(together)[0]


def test_the_terminal_leads_with_the_searchs_answer() -> None:
    text = _text(SIX_SLOTS, _found())
    answer = "The most load that meets the SLO (ttft_p95 ≤ 400 ms): 6 streams."
    assert text.startswith(f"lab under load {answer} 7 streams failed it")
    assert text.index(answer) < text.index("Latency by level") < text.index("No knee")
    assert "The most load" not in _text(SIX_SLOTS)


def test_the_pages_first_heading_is_the_searchs_answer_and_its_plot_draws_the_limit() -> None:
    page = render_load_html(SIX_SLOTS, title="lab under load", found=_found())
    headings = re.findall(r"<h1>(.*?)</h1>", page)
    assert headings == ["The most load that meets the SLO (ttft_p95 ≤ 400 ms): 6 streams"]
    assert '<p class="sentence">7 streams failed it' in page
    assert 'id="load-slo-0"' in page and 'id="load-slo-best"' in page
    assert "against the SLO ttft_p95 ≤ 400 ms, met up to 6" in page
    plain = render_load_html(SIX_SLOTS, title="lab under load")
    assert re.findall(r"<h1>(.*?)</h1>", plain) == ["lab under load"]
    assert "load-slo" not in plain


def test_an_slo_on_the_time_per_token_draws_no_line_on_the_ttft_plot() -> None:
    tpot = FindMax((Objective("tpot", 0.5, 80.0),), (_probe(1.0, True),), 6.0, 7.0,
                   "decode", 256.0)  # fmt: skip
    page = render_load_html(SIX_SLOTS, found=tpot)
    assert 'id="load-slo-0"' not in page and 'id="load-slo-best"' in page


def test_levels_judged_by_their_point_are_named_plainly() -> None:
    assert _found().detail == (
        "7 streams failed it, so the capacity lies between. Queueing broke it first: the "
        "time to first token met its limit at one stream and grows past it under load."
    )
    one = _found(1.0).detail
    assert one.endswith(
        "After 3 rounds the 95% interval at 1 stream still spanned the limit, so that level "
        "was judged by its point estimate; a longer --duration-per-level would decide it."
    )
    many = _found(8.0, 1.0, 7.0).detail
    assert (
        "the 95% intervals at 1, 7 and 8 streams still spanned the limit, so those levels were"
        in many
    )


def test_the_answer_says_how_the_search_ended_when_no_level_failed() -> None:
    passed = tuple(_probe(s, True) for s in (1.0, 2.0, 4.0))
    at_limit = FindMax((P95_400,), passed, 4.0, None, None, 4.0)
    assert at_limit.sentence() == (
        "4 streams met the SLO (ttft_p95 ≤ 400 ms), and no level tried failed it. "
        "The search stopped at its limit of 4 streams."
    )
    spent = FindMax((P95_400,), passed, 4.0, None, None, 256.0)
    assert "The search stopped at 4 streams, its budget spent" in spent.detail
    none = FindMax((P95_400,), (_probe(1.0, False),), None, 1.0, "prefill", 256.0)
    assert none.headline == "No level met the SLO (ttft_p95 ≤ 400 ms): even 1 stream failed it"


def test_the_answer_a_run_keeps_reads_back_whole() -> None:
    found = _found(1.0)
    assert FindMax.from_document(json.loads(json.dumps(found.document()))) == found
    assert FindMax.from_document(None) is None
    assert FindMax.from_document({"objectives": []}) is None


def test_the_time_per_token_has_its_plot_with_its_own_limit() -> None:
    from dataclasses import replace

    tpot = [Percentiles(20.0 + k, 30.0 + 4 * k, 30.0 + 4 * k, 20.0 + k) for k in range(6)]
    levels = tuple(replace(lv, tpot_ms=t) for lv, t in zip(SIX_SLOTS.levels, tpot, strict=True))
    analysis = replace(SIX_SLOTS, levels=levels)
    found = FindMax((Objective("tpot", 0.95, 45.0),), (_probe(1.0, True),), 6.0, 7.0,
                    "decode", 256.0)  # fmt: skip
    page = render_load_html(analysis, found=found)
    assert 'id="load-tpot-p50"' in page and 'id="load-tpot-p95"' in page
    assert 'id="load-tpot-slo-0"' in page
    assert "Time per output token p50 and p95 by load level, against the SLO tpot_p95" in page
    assert "No answer had a second token." not in page
    assert "No answer had a second token." in render_load_html(SIX_SLOTS)
