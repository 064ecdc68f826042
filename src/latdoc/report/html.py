"""A diagnosis as one self-contained HTML page: verdict, findings, remedies, plots.

The page needs no network to open: the stylesheet is inline, the plots are
inline SVG drawn by :mod:`latdoc.report.svg_waterfall` and
:mod:`latdoc.report.svg_plots`, there is no script, font or image to fetch.
Every string that comes from the data is escaped. Colours follow the reader's
light or dark preference.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC

from latdoc.analysis.diagnosis import Diagnosis, Finding, Kind, LengthCurve, Remedy, Scenario
from latdoc.analysis.stats import quantile
from latdoc.records import Sample
from latdoc.report.names import KIND_NAMES, format_value
from latdoc.report.probe_text import format_ms
from latdoc.report.svg import esc
from latdoc.report.svg_plots import length_svg, ttft_histogram_svg, ttft_values
from latdoc.report.svg_theme import STYLESHEET
from latdoc.report.svg_waterfall import MAX_ROWS, waterfall_svg

SCENARIO_NAMES: Mapping[Scenario, str] = {
    Scenario.CHAT: "Real-time chat (latency first)",
    Scenario.BATCH: "Batch analysis (cost first)",
    Scenario.LONGDOC: "Long-document understanding (quality first)",
}


def render_html(diagnosis: Diagnosis, samples: Sequence[Sample]) -> str:
    """The whole page as a string; the caller decides where to write it."""
    title = f"latdoc: {diagnosis.model} at {diagnosis.endpoint}"
    body = [
        _header(diagnosis, samples),
        _verdict(diagnosis),
        _findings(diagnosis.findings),
        _remedies(diagnosis.remedies),
        _plots(diagnosis, samples),
        _measurements(diagnosis),
        _notes(diagnosis),
        f"<footer>Run <code>{esc(diagnosis.run_id)}</code> · made by latdoc</footer>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        f"<title>{esc(title)}</title>\n<style>{STYLESHEET}</style>\n</head>\n"
        "<body>\n<main>\n"
        + "\n".join(part for part in body if part)
        + "\n</main>\n</body>\n</html>\n"
    )


def _header(diagnosis: Diagnosis, samples: Sequence[Sample]) -> str:
    starts = [s.trace.started_at for s in samples]
    if starts:
        first = min(starts)
        date = (
            first.strftime("%Y-%m-%d %H:%M")
            if first.tzinfo is None
            else first.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
        )
    else:
        date = "no requests recorded"
    failed = f"{diagnosis.failed} failed" if diagnosis.failed else "none failed"
    rows = [
        ("Endpoint", f"<code>{esc(diagnosis.endpoint)}</code>"),
        ("Model", f"<code>{esc(diagnosis.model)}</code>"),
        ("Scenario", esc(SCENARIO_NAMES.get(diagnosis.scenario, str(diagnosis.scenario)))),
        ("Date", esc(date)),
        ("Requests", f"{diagnosis.requests} ({failed})"),
    ]
    items = "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in rows)
    return (
        '<header><p class="kicker">latdoc · which kind of slow is yours?</p>'
        f'<h1>Latency diagnosis</h1><dl class="meta">{items}</dl></header>'
    )


def _percent(value: float) -> str:
    return f"{value * 100:.0f} %"


def _verdict(diagnosis: Diagnosis) -> str:
    verdict = diagnosis.verdict
    short, meaning = KIND_NAMES[verdict.primary]
    contributing = ", ".join(esc(KIND_NAMES[k][0]) for k in verdict.contributing)
    also = (
        f'<p class="also">Also contributing: {contributing}</p>'
        if contributing
        else '<p class="also">Nothing else contributes noticeably.</p>'
    )
    return (
        f'<section class="verdict k-border-{verdict.primary.value}">'
        '<p class="kicker">Verdict</p>'
        f'<h2 class="primary"><span class="swatch k-{verdict.primary.value}"></span>'
        f'{esc(short)} <span class="meaning">({esc(meaning)})</span></h2>'
        f'<p class="confidence">Confidence <strong>{_percent(verdict.confidence)}</strong></p>'
        f"{also}{_share_bar(diagnosis.shares_ms)}</section>"
    )


def _share_bar(shares_ms: Mapping[Kind, float]) -> str:
    shares = sorted(((k, v) for k, v in shares_ms.items() if v > 0), key=lambda kv: -kv[1])
    total = sum(v for _, v in shares)
    if total <= 0:
        return '<p class="empty">No latency could be attributed to a kind.</p>'
    segments = []
    legend = []
    for kind, ms in shares:
        share = ms / total * 100
        short = esc(KIND_NAMES[kind][0])
        label = f"<span>{short}</span>" if share >= 12 else ""
        segments.append(
            f'<div class="share k-{kind.value}" style="width:{share:.2f}%" '
            f'title="{short}: {esc(format_ms(ms))} ({share:.0f} %)">{label}</div>'
        )
        legend.append(
            f'<li><span class="swatch k-{kind.value}"></span>{short} '
            f'<strong>{esc(format_ms(ms))}</strong> <span class="muted">{share:.0f} %</span></li>'
        )
    return (
        f'<h3 class="bar-title">Where the time of a typical request goes '
        f'<span class="muted">({esc(format_ms(total))} in all)</span></h3>'
        f'<div class="sharebar">{"".join(segments)}</div>'
        f'<ul class="legend">{"".join(legend)}</ul>'
    )


def _table(rows: Iterable[tuple[str, str]], css_class: str = "evidence") -> str:
    body = "".join(f"<tr><th><code>{esc(k)}</code></th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="{css_class}"><tbody>{body}</tbody></table>' if body else ""


def _finding(finding: Finding) -> str:
    evidence = _table((k, format_value(k, v)) for k, v in finding.evidence.items())
    return (
        f'<article class="card finding k-border-{finding.kind.value}">'
        f'<h3>{esc(finding.title)}</h3><p class="badges">'
        f'<span class="badge k-{finding.kind.value}">{esc(KIND_NAMES[finding.kind][0])}</span>'
        f" adds <strong>{esc(format_ms(finding.share_ms))}</strong> to a typical request · "
        f"confidence <strong>{_percent(finding.confidence)}</strong></p>"
        f'<p class="rule"><span class="muted">Rule:</span> {esc(finding.rule)}</p>{evidence}'
        "</article>"
    )


def _findings(findings: Sequence[Finding]) -> str:
    if not findings:
        return '<section><h2>Findings</h2><p class="empty">No rule fired.</p></section>'
    return "<section><h2>Findings</h2>" + "".join(_finding(f) for f in findings) + "</section>"


def _remedy(rank: int, remedy: Remedy) -> str:
    gain = (
        f"Predicted gain: <strong>about {esc(format_ms(remedy.predicted_gain_ms))}</strong> "
        "per request"
        if remedy.predicted_gain_ms is not None
        else "Predicted gain: not predictable from this run; measure it"
    )
    tradeoff = (
        f'<p class="tradeoff"><strong>Trade-off:</strong> {esc(remedy.tradeoff)}</p>'
        if remedy.tradeoff
        else ""
    )
    return (
        f'<li class="card remedy"><h3><span class="rank">{rank}</span>{esc(remedy.title)}</h3>'
        f'<p class="badges"><span class="badge k-{remedy.addresses.value}">'
        f"{esc(KIND_NAMES[remedy.addresses][0])}</span> {gain}</p>"
        f"<pre><code>{esc(remedy.change)}</code></pre>{tradeoff}</li>"
    )


def _remedies(remedies: Sequence[Remedy]) -> str:
    if not remedies:
        return '<section><h2>Remedies</h2><p class="empty">Nothing to change.</p></section>'
    items = "".join(_remedy(i, r) for i, r in enumerate(remedies, start=1))
    return f'<section><h2>Remedies, best first</h2><ol class="remedies">{items}</ol></section>'


def _figure(title: str, svg: str | None, caption: str, empty: str) -> str:
    drawing = f'<div class="plot-wrap">{svg}</div>' if svg else f'<p class="empty">{esc(empty)}</p>'
    return f"<figure><h3>{esc(title)}</h3>{drawing}<figcaption>{caption}</figcaption></figure>"


def _plots(diagnosis: Diagnosis, samples: Sequence[Sample]) -> str:
    failed = sum(1 for s in samples if not s.trace.ok)
    wf_caption = (
        "One bar per request in the order sent; x is time from the start of that request. "
        f"{failed} failed request{'s' if failed != 1 else ''} marked ✕."
    )
    if len(samples) > MAX_ROWS:
        wf_caption += f" {len(samples) - MAX_ROWS} of {len(samples)} requests left out."
    figures = [
        _figure(
            "Phases of each request",
            waterfall_svg(samples) if samples else None,
            esc(wf_caption),
            "No request was recorded.",
        )
    ]
    if diagnosis.length is not None or any(s.step == "length" for s in samples):
        figures.append(
            _figure(
                "Time to first token against prompt length",
                length_svg(samples, diagnosis.length),
                _length_caption(diagnosis.length, samples),
                "No successful request at a measured prompt length.",
            )
        )
    figures.append(
        _figure(
            "Distribution of time to first token",
            ttft_histogram_svg(samples),
            _histogram_caption(samples),
            "No successful request: there is no time to first token to show.",
        )
    )
    return "<section><h2>Plots</h2>" + "".join(figures) + "</section>"


def _length_caption(curve: LengthCurve | None, samples: Sequence[Sample]) -> str:
    failed = sum(1 for s in samples if s.step == "length" and not s.trace.ok)
    parts = []
    if curve is not None and curve.points:
        parts.append(
            f"Shape: <strong>{esc(curve.shape)}</strong>; prefill about "
            f"{esc(format_ms(curve.prefill_ms_per_1k))} per 1K tokens at the longest length; "
            f"longest ÷ shortest TTFT = <strong>{curve.ratio_long_short:.1f}×</strong> "
            "(≥ 5× means input length is the main bottleneck)."
        )
    if failed:
        parts.append(f"{failed} length request{'s' if failed != 1 else ''} failed, not shown.")
    return " ".join(parts)


def _histogram_caption(samples: Sequence[Sample]) -> str:
    values = sorted(ttft_values(samples))
    if not values:
        return ""
    p50, p95 = quantile(values, 0.5), quantile(values, 0.95)
    return esc(
        f"{len(values)} successful request{'s' if len(values) != 1 else ''}, stacked by step; "
        f"p50 {format_ms(p50)}, p95 {format_ms(p95)}."
    )


def _measured(value: float | None, key: str) -> str:
    return "not measured" if value is None else format_value(key, value)


def _measurements(diagnosis: Diagnosis) -> str:
    blocks = []
    for title, numbers in (("Network", diagnosis.network), ("Load", diagnosis.load)):
        table = _table(((k, _measured(v, k)) for k, v in numbers.items()), "evidence numbers")
        if table:
            blocks.append(f'<div class="card"><h3>{title}</h3>{table}</div>')
    if not blocks:
        return ""
    return f'<section><h2>Measurements</h2><div class="grid2">{"".join(blocks)}</div></section>'


def _notes(diagnosis: Diagnosis) -> str:
    if not diagnosis.notes:
        return ""
    items = "".join(
        f'<li><span class="badge step">{esc(n.step)}</span> {esc(n.text)}</li>'
        for n in diagnosis.notes
    )
    return f'<section><h2>What this run left out</h2><ul class="notes">{items}</ul></section>'
