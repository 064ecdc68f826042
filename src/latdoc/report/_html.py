"""A diagnosis as one self-contained HTML page: verdict, findings, remedies, plots.

The page is a jinja2 template shipped in the package (``templates/report.html.j2``)
with autoescaping on, so every string from the data is escaped; the only markup
passed through unescaped is the SVG that :mod:`latdoc.report._plots` draws. The
stylesheet is inline and the plots are inline SVG with text as paths: the page
needs no network, script, font or image to open. Colours follow the reader's
light or dark preference.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from latdoc.analysis.diagnosis import Diagnosis, Kind, LengthCurve, Scenario
from latdoc.analysis.stats import quantile
from latdoc.records import Sample, Step
from latdoc.report._plot_data import MAX_ROWS, ttft_values
from latdoc.report._theme import KIND_COLOURS
from latdoc.report.names import KIND_NAMES, format_ms, format_value

if TYPE_CHECKING:
    from jinja2 import Environment

SCENARIO_NAMES: Mapping[Scenario, str] = {
    Scenario.CHAT: "Real-time chat (latency first)",
    Scenario.BATCH: "Batch analysis (cost first)",
    Scenario.LONGDOC: "Long-document understanding (quality first)",
}


@functools.cache
def environment() -> Environment:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(
        loader=PackageLoader("latdoc.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_html(diagnosis: Diagnosis, samples: Sequence[Sample]) -> str:
    """The whole page as a string; the caller decides where to write it."""
    context = page_context(diagnosis, samples)
    context["figures"] = _figures(diagnosis, samples)
    return environment().get_template("report.html.j2").render(context)


def page_context(diagnosis: Diagnosis, samples: Sequence[Sample]) -> dict[str, Any]:
    """Everything the template shows except the plots, as plain values."""
    return {
        "title": f"latdoc: {diagnosis.model} at {diagnosis.endpoint}",
        "diagnosis": diagnosis,
        "scenario": SCENARIO_NAMES.get(diagnosis.scenario, str(diagnosis.scenario)),
        "date": _date(samples),
        "verdict": _verdict(diagnosis),
        "shares": _shares(diagnosis.shares_ms),
        "findings": [
            {
                "finding": f,
                "kind": f.kind.value,
                "short": KIND_NAMES[f.kind][0],
                "share": format_ms(f.share_ms),
                "confidence": _percent(f.confidence),
                "evidence": [(k, format_value(k, v)) for k, v in f.evidence.items()],
            }
            for f in diagnosis.findings
        ],
        "remedies": [
            {
                "remedy": r,
                "kind": r.addresses.value,
                "short": KIND_NAMES[r.addresses][0],
                "gain": None if r.predicted_gain_ms is None else format_ms(r.predicted_gain_ms),
            }
            for r in diagnosis.remedies
        ],
        "measurements": [
            (title, [(k, _measured(v, k)) for k, v in numbers.items()])
            for title, numbers in (("Network", diagnosis.network), ("Load", diagnosis.load))
            if numbers
        ],
        "kind_colours": KIND_COLOURS,
    }


def _date(samples: Sequence[Sample]) -> str:
    starts = [s.trace.started_at for s in samples]
    if not starts:
        return "no requests recorded"
    first = min(starts)
    if first.tzinfo is None:
        return first.strftime("%Y-%m-%d %H:%M")
    return first.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _percent(value: float) -> str:
    return f"{value * 100:.0f} %"


def _verdict(diagnosis: Diagnosis) -> dict[str, Any]:
    verdict = diagnosis.verdict
    short, meaning = KIND_NAMES[verdict.primary]
    return {
        "kind": verdict.primary.value,
        "short": short,
        "meaning": meaning,
        "confidence": _percent(verdict.confidence),
        "contributing": [KIND_NAMES[k][0] for k in verdict.contributing],
    }


def _shares(shares_ms: Mapping[Kind, float]) -> dict[str, Any]:
    """The segments of the "where the time goes" bar, largest first, widths in percent."""
    shares = sorted(((k, v) for k, v in shares_ms.items() if v > 0), key=lambda kv: -kv[1])
    total = sum(v for _, v in shares)
    return {
        "total": format_ms(total) if total > 0 else None,
        "segments": [
            {
                "kind": kind.value,
                "short": KIND_NAMES[kind][0],
                "ms": format_ms(ms),
                "percent": f"{ms / total * 100:.0f} %",
                "width": f"{ms / total * 100:.2f}",
                "labelled": ms / total >= 0.12,
            }
            for kind, ms in shares
        ]
        if total > 0
        else [],
    }


def _measured(value: float | None, key: str) -> str:
    return "not measured" if value is None else format_value(key, value)


def _figures(diagnosis: Diagnosis, samples: Sequence[Sample]) -> list[dict[str, Any]]:
    # matplotlib is loaded here, on the first page rendered, never by the terminal path.
    from latdoc.report import _plots as plots

    waterfall = _figure(
        "Phases of each request",
        plots.waterfall_svg(samples) if samples else None,
        _waterfall_caption(samples),
        "No request was recorded.",
    )
    waterfall["failures"] = _failures(samples)
    figures = [waterfall]
    if diagnosis.length is not None or any(s.step == Step.LENGTH for s in samples):
        figures.append(
            _figure(
                "Time to first token against prompt length",
                plots.length_svg(samples, diagnosis.length),
                _length_caption(diagnosis.length, samples),
                "No successful request at a measured prompt length.",
            )
        )
    figures.append(
        _figure(
            "Distribution of time to first token",
            plots.ttft_histogram_svg(samples),
            _histogram_caption(samples),
            "No successful request: there is no time to first token to show.",
        )
    )
    return figures


def _figure(title: str, svg: str | None, caption: str, empty: str) -> dict[str, Any]:
    # The SVG comes from matplotlib, whose text is drawn as paths: the data strings
    # in it (row labels, legend entries) are glyph outlines or escaped comments.
    return {
        "title": title,
        "svg": None if svg is None else Markup(svg),
        "caption": caption,
        "empty": empty,
        "failures": [],
    }


def _failures(samples: Sequence[Sample]) -> list[tuple[str, int]]:
    """Each distinct failure (``http:429 during wait: …``) with how many requests it hit."""
    counts: dict[str, int] = {}
    for s in samples:
        if s.trace.error is not None:
            text = str(s.trace.error)
            counts[text] = counts.get(text, 0) + 1
    return list(counts.items())


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _waterfall_caption(samples: Sequence[Sample]) -> str:
    failed = [s.trace.error.code for s in samples if s.trace.error is not None]
    caption = (
        "One bar per request in the order sent; x is time from the start of that request. "
        f"{_plural(len(failed), 'failed request')} marked ✕"
    )
    if failed:
        counts: dict[str, int] = {}
        for code in failed:
            counts[code] = counts.get(code, 0) + 1
        caption += " (" + ", ".join(f"{code} × {n}" for code, n in counts.items()) + ")"
    caption += "."
    if len(samples) > MAX_ROWS:
        left_out = len(samples) - MAX_ROWS
        caption += (
            f" {MAX_ROWS} of {len(samples)} requests shown, evenly spaced; "
            f"{left_out} of {len(samples)} requests left out."
        )
    return caption


def _length_caption(curve: LengthCurve | None, samples: Sequence[Sample]) -> str:
    failed = sum(1 for s in samples if s.step == Step.LENGTH and not s.trace.ok)
    parts = []
    if curve is not None and curve.points:
        parts.append(
            f"Shape: {curve.shape}; prefill about {format_ms(curve.prefill_ms_per_1k)} per 1K "
            f"tokens at the longest length; longest ÷ shortest TTFT = "
            f"{curve.ratio_long_short:.1f}× (≥ 5× means input length is the main bottleneck). "
            "The line is the fitted a + b·k + c·k² for k thousand prompt tokens."
        )
    if failed:
        parts.append(f"{_plural(failed, 'length request')} failed, not shown.")
    return " ".join(parts)


def _histogram_caption(samples: Sequence[Sample]) -> str:
    values = sorted(ttft_values(samples))
    if not values:
        return ""
    p50, p95 = quantile(values, 0.5), quantile(values, 0.95)
    return (
        f"{_plural(len(values), 'successful request')}, stacked by step; "
        f"p50 {format_ms(p50)}, p95 {format_ms(p95)}."
    )
