"""A watch by the clock shown: a table of buckets, the peak against the rest, a heat map.

The terminal table and the JSON document (``latdoc.watch/1``) hold the same numbers;
the HTML page adds a heat map of TTFT p50/p95, TPOT and error rate per bucket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from latdoc.features.watch.analysis import DAY_S, ClockReport, Peak, p_text
from latdoc.features.watch.send import REQUESTS_PER_TICK, WatchPlan, WatchResult
from latdoc.report.names import format_ms

WATCH_SCHEMA = "latdoc.watch/1"


def _cycle_text(report: ClockReport) -> str:
    bucket = duration_text(report.bucket_s, spaced=True)
    if report.cycle_s is None:
        return f"by time, buckets of {bucket}"
    if report.cycle_s == DAY_S:
        return f"buckets of {bucket} over the UTC day"
    return f"buckets of {bucket} over a {duration_text(report.cycle_s, spaced=True)} cycle"


def duration_text(seconds: float, *, spaced: bool = False) -> str:
    """A duration in its largest whole unit, as the command line writes it (``5m``,
    ``1h``, ``1d``, ``90s``) or, ``spaced``, in a sentence (``5 min``, ``1 h``, ``90 s``)."""
    for short, word, size in (("d", "d", 86400), ("h", "h", 3600), ("m", "min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g} {word}" if spaced else f"{seconds / size:g}{short}"
    return f"{seconds:g} s" if spaced else f"{seconds:g}s"


def peak_sentence(peak: Peak) -> str:
    ci = "" if peak.ratio_ci is None else f", 95% CI {peak.ratio_ci[0]:.2f}–{peak.ratio_ci[1]:.2f}"
    return (
        f"Peak {', '.join(peak.ranges)}: TTFT p50 {format_ms(peak.peak_ttft_p50_ms)} against "
        f"{format_ms(peak.off_peak_ttft_p50_ms)} off-peak, {peak.ratio:.2f}×{ci} "
        f"({p_text(peak.p_value)}, Mann–Whitney, n = {peak.peak_n}/{peak.off_peak_n})"
    )


def started_sentence(
    plan: WatchPlan,
    name: str,
    run_id: str,
    resumed: bool,
    *,
    duration_s: float | None,
    max_requests: int,
) -> str:
    """What a run of the watch ``name`` says as it starts (or resumes): its schedule
    (``duration_s`` ``None``: one tick), its cap on requests, and that Ctrl-C keeps
    every trace."""
    how = "resumed" if resumed else "started"
    if duration_s is None:
        planned = "one tick"
    else:
        ticks = math.ceil(duration_s / plan.every_s)
        planned = (
            f"every {duration_text(plan.every_s)} ± {plan.jitter:.0%} for "
            f"{duration_text(duration_s)} (~{ticks} ticks)"
        )
    return (
        f"Watch {name!r} {how} (run {run_id}): {planned}, at most {max_requests} requests "
        "in all; Ctrl-C stops it and keeps every trace."
    )


_STOPPED_BY = {"time": "its duration ended", "budget": "the budget ran out", "once": "--once"}


def ended_sentences(name: str, result: WatchResult | None) -> list[str]:
    """What one run of the watch ``name`` did and why it stopped (``None``: Ctrl-C ended
    it), with what to change when it skipped ticks or sent none."""
    if result is None:
        return ["Interrupted: every finished trace is kept."]
    said = [
        f"Watch {name!r}: {_count(result.ticks, 'tick')}, "
        f"{_count(result.requests, 'request')} this time; "
        f"stopped because {_STOPPED_BY[result.stopped_by]}."
    ]
    if result.skipped_ticks:
        said.append(
            f"{_count(result.skipped_ticks, 'tick')} skipped this time: a tick took "
            "longer than --every; give a longer --every to keep them even."
        )
    if result.stopped_by == "time" and result.ticks == 0:
        said.append(
            f"The watch's --duration has passed since it started; give a longer one "
            f"or a new --name (a tick is {REQUESTS_PER_TICK} requests)."
        )
    return said


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def skipped_sentence(skipped_ticks: int | None) -> str | None:
    """What the watch did not send, or ``None`` when it sent every tick (or did not count)."""
    if not skipped_ticks:
        return None
    ticks = "1 tick" if skipped_ticks == 1 else f"{skipped_ticks} ticks"
    return f"{ticks} skipped: a tick took longer than --every"


def render_clock(
    report: ClockReport, *, title: str, skipped_ticks: int | None = None
) -> RenderableType:
    """A watch's report by the clock as a terminal table, one row a bucket, the peak
    marked."""
    table = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left")
    for column in ("bucket", "requests", "TTFT p50", "TTFT p95", "TPOT p50", "errors"):
        table.add_column(column, justify="left" if column == "bucket" else "right")
    peak_ids = set(report.peak.buckets) if report.pattern and report.peak else set()
    for b in report.buckets:
        if b.requests == 0:
            continue
        rate = b.error_rate
        table.add_row(
            b.label,
            str(b.requests),
            format_ms(None if b.ttft is None else b.ttft.p50),
            format_ms(b.ttft_p95_ms),
            format_ms(b.tpot_p50_ms),
            "-" if rate is None else f"{rate:.0%}",
            style="bold" if b.index in peak_ids else None,
        )
    parts: list[RenderableType] = [table, Text(f"  {_cycle_text(report)}; TTFT of each tick's "
                                              "first request (cold, short)")]  # fmt: skip
    empty = sum(1 for b in report.buckets if b.requests == 0)
    if empty:
        parts.append(Text(f"  {empty} of {len(report.buckets)} buckets have no request yet."))
    if skipped := skipped_sentence(skipped_ticks):
        parts.append(Text(f"  {skipped}."))
    if report.peak is not None:
        parts.append(Text("  " + peak_sentence(report.peak)))
    parts.append(Text(f"  Verdict: {report.verdict}", style="bold"))
    return Group(*parts)


def clock_to_dict(
    report: ClockReport, *, name: str, run_id: str, skipped_ticks: int | None = None
) -> dict[str, Any]:
    """A watch's report by the clock as the ``latdoc.watch`` JSON document."""
    peak = report.peak
    return {
        "schema": WATCH_SCHEMA,
        "watch": name,
        "run_id": run_id,
        "unit": "ms",
        "cycle_s": report.cycle_s,
        "bucket_s": report.bucket_s,
        "skipped_ticks": skipped_ticks,
        "buckets": [
            {
                "index": b.index,
                "start_s": b.start_s,
                "label": b.label,
                "requests": b.requests,
                "errors": b.errors,
                "error_rate": b.error_rate,
                "ttft_p50": None if b.ttft is None else b.ttft.p50,
                "ttft_p95": b.ttft_p95_ms,
                "ttft_n": 0 if b.ttft is None else b.ttft.n,
                "tpot_p50": b.tpot_p50_ms,
            }
            for b in report.buckets
        ],
        "peak": None
        if peak is None
        else {
            "ranges": list(peak.ranges),
            "buckets": list(peak.buckets),
            "ttft_p50": peak.peak_ttft_p50_ms,
            "off_peak_ttft_p50": peak.off_peak_ttft_p50_ms,
            "ratio": peak.ratio,
            "ratio_ci": None if peak.ratio_ci is None else list(peak.ratio_ci),
            "p_value": peak.p_value,
            "n": [peak.peak_n, peak.off_peak_n],
            "significant": peak.significant,
        },
        "pattern": report.pattern,
        "verdict": report.verdict,
    }


def render_clock_html(
    report: ClockReport,
    *,
    name: str,
    run_id: str,
    endpoint: str,
    skipped_ticks: int | None = None,
) -> str:
    """The watch by the clock as one self-contained HTML page (no script, nothing fetched)."""
    from latdoc.report.pages import clock_heatmap_svg, environment

    labels = [b.label for b in report.buckets]
    heatmap = clock_heatmap_svg(
        labels,
        [
            ("TTFT p50", [None if b.ttft is None else b.ttft.p50 for b in report.buckets]),
            ("TTFT p95", [b.ttft_p95_ms for b in report.buckets]),
            ("TPOT p50", [b.tpot_p50_ms for b in report.buckets]),
            ("error rate", [b.error_rate for b in report.buckets]),
        ],
    )
    document = clock_to_dict(report, name=name, run_id=run_id, skipped_ticks=skipped_ticks)
    return (
        environment()
        .get_template("watch.html.j2")
        .render(
            title=f"latdoc watch {name}",
            name=name,
            run_id=run_id,
            endpoint=endpoint,
            how=_cycle_text(report),
            buckets=_html_rows(report, document["buckets"]),
            heatmap=heatmap,
            peak=None if report.peak is None else peak_sentence(report.peak),
            verdict=report.verdict,
            pattern=report.pattern,
            skipped=skipped_sentence(skipped_ticks),
        )
    )


def _html_rows(report: ClockReport, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    peak_ids = set(report.peak.buckets) if report.pattern and report.peak else set()
    return [
        {
            "label": row["label"],
            "requests": row["requests"],
            "ttft_p50": format_ms(row["ttft_p50"]),
            "ttft_p95": format_ms(row["ttft_p95"]),
            "tpot_p50": format_ms(row["tpot_p50"]),
            "error_rate": "-" if row["error_rate"] is None else f"{row['error_rate']:.0%}",
            "peak": row["index"] in peak_ids,
        }
        for row in rows
        if row["requests"] or len(rows) <= 48
    ]


@dataclass(frozen=True)
class ShownClock:
    """A watch by the clock as the command shows it (a :class:`latdoc.report.shown.Shown`):
    the table under ``title``, the document stamped when it was made, the heat map."""

    report: ClockReport
    name: str
    run_id: str
    endpoint: str
    title: str
    skipped_ticks: int | None = None

    @property
    def page_kind(self) -> str:
        return "report"

    def document(self) -> dict[str, Any]:
        document = clock_to_dict(
            self.report, name=self.name, run_id=self.run_id, skipped_ticks=self.skipped_ticks
        )
        document["generated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        return document

    def shown(self) -> tuple[RenderableType, ...]:
        return (render_clock(self.report, title=self.title, skipped_ticks=self.skipped_ticks),)

    def page(self) -> str:
        return render_clock_html(
            self.report,
            name=self.name,
            run_id=self.run_id,
            endpoint=self.endpoint,
            skipped_ticks=self.skipped_ticks,
        )

    def kept(self) -> None:
        return None
