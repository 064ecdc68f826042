"""A diagnosis as one self-contained HTML page: verdict, findings, remedies, plots.

The page is a jinja2 template shipped in the package (``templates/report.html.j2``)
with autoescaping on, so every string from the data is escaped; the only markup
passed through unescaped is the SVG that :mod:`latdoc.report._plots` draws. The
stylesheet is inline and the plots are inline SVG with text as paths: the page
needs no network, script, font or image to open. Colours follow the reader's
light or dark preference.

The page speaks the active language (:mod:`latdoc.i18n`): the template's own words
through jinja2's i18n extension (``_("…")``, extracted into the same catalogue), the
data's through the ``tr`` filter and the sentences made here through
:func:`~latdoc.i18n.say`. The plots' axis labels stay English: their text is drawn as
glyph outlines from a font with no Chinese in it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from latdoc.analysis.kinds import spec_of, specs
from latdoc.analysis.stats import quantile
from latdoc.i18n import N_, language, say, translate
from latdoc.i18n import gettext as _
from latdoc.model import Diagnosis, Finding, Kind, RequestParts, Scenario, cost_words
from latdoc.records import Sample, Step
from latdoc.report._layers import PARTING, distinct_layers, layers_text
from latdoc.report._plot_data import MAX_ROWS, ttft_values
from latdoc.report._server import disagreement_texts
from latdoc.report._theme import PHASE_COLOURS
from latdoc.report._truth import (
    bank_accuracy_text,
    gain_text,
    keepalive_text,
    length_rule_text,
    longer_prompt_text,
    longest_ratio_text,
    near_threshold_text,
    negligible_bar_text,
    reference_text,
    shown_probability,
    unmeasured_text,
    workload_text,
)
from latdoc.report.names import SHAPES, format_ms, format_value, kind_short, step_word

if TYPE_CHECKING:
    from jinja2 import Environment

SCENARIO_NAMES: Mapping[Scenario, str] = {
    Scenario.CHAT: N_("Real-time chat (latency first)"),
    Scenario.BATCH: N_("Batch analysis (cost first)"),
    Scenario.LONGDOC: N_("Long-document understanding (quality first)"),
}


@functools.cache
def environment() -> Environment:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("latdoc.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        extensions=["jinja2.ext.i18n"],
    )
    # The callables read the active language when the page renders, so one environment
    # serves every language.
    env.install_gettext_callables(  # type: ignore[attr-defined]
        gettext=_, ngettext=lambda one, many, n: _(one if n == 1 else many), newstyle=True
    )
    env.filters["tr"] = translate
    return env


def render_html(
    diagnosis: Diagnosis,
    samples: Sequence[Sample],
    *,
    lead_figures: Sequence[tuple[str, str | None, str, str]] = (),
) -> str:
    """The whole page as a string; the caller decides where to write it. ``lead_figures``
    come before the diagnosis's own, each a title, an inline ``<svg>`` (``None``: nothing
    to draw), a caption and what to say instead of an empty plot."""
    context = page_context(diagnosis, samples)
    context["figures"] = [_figure(*lead) for lead in lead_figures] + _figures(diagnosis, samples)
    return environment().get_template("report.html.j2").render(context)


def page_context(diagnosis: Diagnosis, samples: Sequence[Sample]) -> dict[str, Any]:
    """Everything the template shows except the plots, as plain values."""
    negligible = set(diagnosis.verdict.negligible)
    parts_only = spec_of(diagnosis.verdict.primary).shows_request_parts
    healthy_parts = diagnosis.typical_request if parts_only else None
    scenario = SCENARIO_NAMES.get(diagnosis.scenario)
    return {
        "lang": language(),
        "title": say(
            "latdoc: {model} at {endpoint}", model=diagnosis.model, endpoint=diagnosis.endpoint
        ),
        "diagnosis": diagnosis,
        "requests": translate(diagnosis.requests_text()),
        "scenario": str(diagnosis.scenario) if scenario is None else _(scenario),
        "cost": translate(cost_words(diagnosis.cost, diagnosis.model)),
        "ranked_for": None
        if diagnosis.priorities is None
        else translate(diagnosis.priorities.text()),
        "date": _date(samples),
        "verdict": _verdict(diagnosis),
        "shares": _parts(healthy_parts)
        if healthy_parts is not None
        else _shares(
            {k: v for k, v in diagnosis.shares_ms.items() if k not in negligible},
            None if diagnosis.workload is None else diagnosis.workload.total_ms,
        ),
        "workload": _sentence_or_none(workload_text(diagnosis)),
        "longer_prompt": _sentence_or_none(longer_prompt_text(diagnosis)),
        "step_word": step_word,
        "findings": [_finding(f) for f in diagnosis.findings if f.kind not in negligible],
        "negligible": [_finding(f) for f in diagnosis.findings if f.kind in negligible],
        "negligible_bar": negligible_bar_text(diagnosis),
        "remedies": [
            {
                "remedy": r,
                "kind": r.addresses.value,
                "short": kind_short(r.addresses),
                "gain": gain_text(r),
                "unmeasured": unmeasured_text(r),
                "effects": None if r.effects is None else translate(r.effects.text() or ""),
            }
            for r in diagnosis.remedies
        ],
        "measurements": [
            (title, [(k, _measured(v, k)) for k, v in numbers.items()])
            for title, numbers in (
                (_("Network"), _parted(diagnosis.network)),
                (_("Load"), diagnosis.load),
                (_("Reasoning"), diagnosis.reasoning),
                *_server_cards(diagnosis),
            )
            if numbers
        ],
        "network_lines": _network_lines(diagnosis),
        "disagreements": disagreement_texts(diagnosis.server),
        "kind_colours": {spec.kind.value: spec.colour for spec in specs()},
        "part_colours": {key: PHASE_COLOURS[phase] for key, phase in _PART_PHASES.items()},
    }


_PART_PHASES = {
    "setup": "connect",
    "send": "send",
    "queue": "queue",
    "prefill": "wait",
    "reasoning": "reasoning",
    "decode": "stream",
}
"""Each part of a request drawn in the colour of the waterfall phase it ends with."""
_PART_KEYS = {"network setup": "setup", "server wait": "queue"}
"""A part's CSS key where it differs from its name."""


def _network_lines(diagnosis: Diagnosis) -> list[str]:
    """Step 1's sentences, as the terminal prints them: keep-alive's saving (or why it was
    not measured) and what the network rule decided."""
    lines = []
    keepalive = keepalive_text(diagnosis)
    if keepalive is not None:
        lines.append(_sentence(keepalive))
    layers = layers_text(diagnosis.network)
    if layers is not None:
        lines.append(_sentence(layers))
    if diagnosis.network_check is not None:
        rule = translate(diagnosis.network_check.statement)
        lines.append(say("Seed rule: {rule}.", rule=rule))
    return lines


def _sentence(text: str) -> str:
    """``text``, already in the active language, as a sentence of its own: its first
    letter upper-case (a Chinese sentence has none) and its full stop."""
    return say("{sentence}.", sentence=text[:1].upper() + text[1:])


def _sentence_or_none(text: str | None) -> str | None:
    return None if text is None else _sentence(text)


def _parted(numbers: Mapping[str, float | None]) -> dict[str, float | None]:
    """Step 1's numbers without the first-token layers that coincide with another."""
    shown = {key for key, _, _ in distinct_layers(numbers)}
    return {k: v for k, v in numbers.items() if k not in PARTING or k in shown}


def _server_cards(diagnosis: Diagnosis) -> list[tuple[str, Mapping[str, float | None]]]:
    """The server's own timing and its engine metrics, each as a card of numbers."""
    account = diagnosis.server
    if account is None:
        return []
    return [
        (say("The server's own timing ({source})", source=account.source), account.numbers),
        (say("Engine metrics ({source})", source=account.metrics_source), account.metrics),
    ]


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "finding": f,
        "kind": f.kind.value,
        "short": kind_short(f.kind),
        "share": format_ms(f.share_ms) if f.share_ms > 0 else "",
        "excess": format_ms(f.excess_ms) if f.past_healthy else "",
        "confidence": _percent(f.confidence),
        "n": f.n,
        "evidence": [(k, format_value(k, v)) for k, v in f.evidence.items()],
    }


def _date(samples: Sequence[Sample]) -> str:
    starts = [s.trace.started_at for s in samples]
    if not starts:
        return _("no requests recorded")
    first = min(starts)
    if first.tzinfo is None:
        return first.strftime("%Y-%m-%d %H:%M")
    return first.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _percent(value: float) -> str:
    return f"{value * 100:.0f} %"


def _verdict(diagnosis: Diagnosis) -> dict[str, Any]:
    verdict = diagnosis.verdict
    spec = spec_of(verdict.primary)
    return {
        "kind": verdict.primary.value,
        "short": translate(spec.name),
        "meaning": translate(spec.meaning),
        "confidence": _percent(shown_probability(verdict.confidence)),
        "calibrated": verdict.confidence_model is not None,
        "bank": _sentence_or_none(bank_accuracy_text(verdict)),
        "near": _sentence_or_none(near_threshold_text(verdict)),
        "reference": _sentence_or_none(reference_text(diagnosis)),
        "contributing": [kind_short(k) for k in verdict.contributing],
        "negligible": [kind_short(k) for k in verdict.negligible],
    }


def _shares(shares_ms: Mapping[Kind, float], request_ms: float | None) -> dict[str, Any]:
    """The segments of the "where the time goes" bar of the typical request, largest
    first, widths in percent of its time; what no kind adds is the rest of it."""
    shares = sorted(((k, v) for k, v in shares_ms.items() if v > 0), key=lambda kv: -kv[1])
    named = sum(v for _, v in shares)
    total = max(named, request_ms or 0.0)
    segments = [(f"k-{kind.value}", kind_short(kind), ms) for kind, ms in shares]
    if total > named > 0:
        segments.append((f"k-{Kind.HEALTHY.value}", _("The rest of it"), total - named))
    return {
        "title": _("Where the time of that request goes"),
        "total": format_ms(total) if total > 0 else None,
        "segments": [
            {
                "css": css,
                "short": short,
                "ms": format_ms(ms),
                "percent": f"{ms / total * 100:.0f} %",
                "width": f"{ms / total * 100:.2f}",
                "labelled": ms / total >= 0.12,
            }
            for css, short, ms in segments
        ]
        if named > 0
        else [],
    }


def _parts(parts: RequestParts) -> dict[str, Any]:
    """The "where the time goes" bar of a healthy run: a request on a new connection,
    phase by phase, in the order it passes them."""
    total = parts.total_ms
    return {
        "title": say(
            "Where the time of that request on a new connection goes (median of each phase "
            "over {n})",
            n=parts.requests,
        ),
        "total": format_ms(total) if total > 0 else None,
        "segments": [
            {
                "css": f"p-{key}",
                "short": _(name)[:1].upper() + _(name)[1:],
                "ms": format_ms(ms),
                "percent": f"{ms / total * 100:.0f} %",
                "width": f"{ms / total * 100:.2f}",
                "labelled": ms / total >= 0.12,
            }
            for name, ms in parts.items()
            if ms > 0
            for key in (_PART_KEYS.get(name, name),)
        ]
        if total > 0
        else [],
    }


def _measured(value: float | None, key: str) -> str:
    return _("not measured") if value is None else format_value(key, value)


def _figures(diagnosis: Diagnosis, samples: Sequence[Sample]) -> list[dict[str, Any]]:
    # matplotlib is loaded here, on the first page rendered, never by the terminal path.
    from latdoc.report import _plots as plots

    waterfall = _figure(
        _("Phases of each request"),
        plots.waterfall_svg(samples) if samples else None,
        _waterfall_caption(samples),
        _("No request was recorded."),
    )
    waterfall["failures"] = _failures(samples)
    figures = [waterfall]
    if diagnosis.length is not None or any(s.step == Step.LENGTH for s in samples):
        figures.append(
            _figure(
                _("Time to first token against prompt length"),
                plots.length_svg(samples, diagnosis.length),
                _length_caption(diagnosis, samples),
                _("No successful request at a measured prompt length."),
            )
        )
    figures.append(
        _figure(
            _("Distribution of time to first token"),
            plots.ttft_histogram_svg(samples),
            _histogram_caption(samples),
            _("No successful request: there is no time to first token to show."),
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


def _plural(n: int, one: str, many: str, **values: object) -> str:
    """``one`` or ``many`` (each with a field ``{n}``), as ``n`` says, said with ``n`` and
    ``values``."""
    return say(one if n == 1 else many, n=n, **values)


def _waterfall_caption(samples: Sequence[Sample]) -> str:
    failed = [s.trace.error.code for s in samples if s.trace.error is not None]
    marked = _plural(
        len(failed), N_("{n} failed request marked ✕"), N_("{n} failed requests marked ✕")
    )
    if failed:
        counts: dict[str, int] = {}
        for code in failed:
            counts[code] = counts.get(code, 0) + 1
        marked += " (" + _(", ").join(f"{code} × {n}" for code, n in counts.items()) + ")"
    caption = say(
        "One bar per request in the order sent; x is time from the start of that request. "
        "{marked}.",
        marked=marked,
    )
    if len(samples) > MAX_ROWS:
        left_out = len(samples) - MAX_ROWS
        caption += say(
            " {shown} of {n} requests shown, evenly spaced; {left} of {n} requests left out.",
            shown=MAX_ROWS,
            n=len(samples),
            left=left_out,
        )
    return caption


def _length_caption(diagnosis: Diagnosis, samples: Sequence[Sample]) -> str:
    curve = diagnosis.length
    failed = sum(1 for s in samples if s.step == Step.LENGTH and not s.trace.ok)
    parts = []
    if curve is not None and curve.points:
        band = _(" The band is its 95% bootstrap interval.") if curve.draws else ""
        parts.append(
            say(
                "Shape: {shape}; prefill about {ms} per 1K tokens at the longest length. The "
                "line is the fitted a + b·k + c·k² for k thousand prompt tokens, on a log axis "
                "of prompt length.{band}",
                shape=translate(SHAPES.get(curve.shape, curve.shape)),
                ms=format_ms(curve.prefill_ms_per_1k),
                band=band,
            )
        )
    if diagnosis.length_check is not None:
        parts.append(_sentence(length_rule_text(diagnosis.length_check)))
    longest = longest_ratio_text(diagnosis)
    if longest is not None:
        parts.append(_sentence(longest))
    if failed:
        parts.append(
            _plural(
                failed,
                N_("{n} length request failed, not shown."),
                N_("{n} length requests failed, not shown."),
            )
        )
    return " ".join(parts)


def _histogram_caption(samples: Sequence[Sample]) -> str:
    values = sorted(ttft_values(samples))
    if not values:
        return ""
    p50, p95 = quantile(values, 0.5), quantile(values, 0.95)
    return _plural(
        len(values),
        N_("{n} successful request, stacked by step; p50 {p50}, p95 {p95}."),
        N_("{n} successful requests, stacked by step; p50 {p50}, p95 {p95}."),
        p50=format_ms(p50),
        p95=format_ms(p95),
    )
