"""``latdoc load`` shown: two tables per level in the terminal, a JSON document, a page.

The terminal view fits 80 columns: latency by level, then throughput by level,
then the knee, the plateau, Little's law and goodput in sentences.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.analysis.gates import GateReport
from latdoc.analysis.policy import (
    CLIENT_DELAY_MS,
    KNEE_MIN_RISE_MS,
    KNEE_RATIO,
    LITTLE_TOLERANCE,
    PLATEAU_GROWTH,
)
from latdoc.features.load.analysis import (
    LevelStats,
    LoadAnalysis,
    Percentiles,
    knee_base,
    processes_for,
)
from latdoc.records import StepNote
from latdoc.report.names import format_ms

LOAD_SCHEMA = "latdoc.load/1"


def _pct(p: Percentiles | None, which: str) -> str:
    return "-" if p is None else format_ms(getattr(p, which))


def _latency_unit(analysis: LoadAnalysis) -> str:
    """One unit for the whole latency table: seconds once any value reaches 10 s."""
    biggest = max(
        (p.p99 for lv in analysis.levels for p in (lv.ttft_ms, lv.tpot_ms, lv.total_ms) if p),
        default=0.0,
    )
    return "s" if biggest >= 10_000 else "ms"


def _number(p: Percentiles | None, which: str, unit: str) -> str:
    if p is None:
        return "-"
    value = getattr(p, which) / (1000 if unit == "s" else 1)
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def _level_name(lv: LevelStats) -> str:
    return f"{lv.window.label} (partial)" if lv.window.partial else lv.window.label


def _table(headers: Sequence[str]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for k, header in enumerate(headers):
        table.add_column(header, justify="left" if k == 0 else "right", no_wrap=True)
    return table


def findings(analysis: LoadAnalysis) -> list[str]:
    """The knee, the plateau, Little's law, goodput and unsustained rates, in sentences."""
    lines = _knee(analysis)
    lines += _client_delay(analysis)
    lines += _client_limits(analysis)
    lines += _plateau(analysis)
    lines += _little(analysis)
    lines += _goodput(analysis)
    for lv in analysis.levels:
        if lv.failures:
            said = ", ".join(f"{f.count} {f.code} during {f.phase}" for f in lv.failures)
            lines.append(f"Failed at {_level_name(lv)}: {said}.")
    for lv in analysis.levels:
        if lv.sustained is False:
            w = lv.window
            lines.append(
                f"The client could not sustain {w.rate:g}/s: it sent {_rate(lv.sent_per_s)}/s "
                f"(arrivals a median {format_ms(w.late_ms_p50)} late); raise --max-in-flight "
                "or lower the rate."
            )
    return lines


def _knee(analysis: LoadAnalysis) -> list[str]:
    """The knee against the lowest level, or that there was none."""
    lines: list[str] = []
    reference = knee_base(analysis.levels)
    base = None if reference is None else reference[1].p50
    lowest = "the lowest level" if reference is None else _level_name(reference[0])
    knee = analysis.knee
    what = "TTFT p50"
    if analysis.levels and analysis.levels[0].server_ttft_ms is not None:
        what = "server TTFT p50 (from the wire)"
    knee_ttft = None if knee is None else knee.server_side_ttft_ms
    if knee is not None and knee_ttft is not None and base is not None:
        lines.append(
            f"Knee at {_level_name(knee)}: {what} {format_ms(knee_ttft.p50)}, "
            f"{knee_ttft.p50 / base:.1f}× the {format_ms(base)} at {lowest} "
            f"(at least {KNEE_RATIO:g}× and {KNEE_MIN_RISE_MS:.0f} ms more): requests wait "
            "for the server from there."
        )
    elif base is not None:
        lines.append(
            f"No knee: {what} stayed below {KNEE_RATIO:g}× or within "
            f"{KNEE_MIN_RISE_MS:.0f} ms of the {format_ms(base)} at {lowest} at every level."
        )
    return lines


def _client_delay(analysis: LoadAnalysis) -> list[str]:
    """The level whose client's own delay was the longest, where it passed the bar."""
    lines: list[str] = []
    delays = [(lv, p.p50) for lv in analysis.levels if (p := lv.client_delay_ms) is not None]
    if delays:
        slowest, delay = max(delays, key=lambda pair: pair[1])
        if delay > CLIENT_DELAY_MS:
            lines.append(
                f"The client's own delay had a median of {format_ms(delay)} at "
                f"{_level_name(slowest)}: its event loop held requests back before they left. "
                "TTFT includes it; the knee and the server's time do not."
            )
    return lines


def _plateau(analysis: LoadAnalysis) -> list[str]:
    """The throughput plateau, or that requests/s still grew."""
    lines: list[str] = []
    plateau = analysis.plateau
    if plateau is not None and analysis.peak_requests_per_s is not None:
        lines.append(
            f"Throughput plateau at {_level_name(plateau)}: {_rate(plateau.requests_per_s)} "
            f"requests/s, less than {PLATEAU_GROWTH:.0%} more than the level before "
            f"(peak {_rate(analysis.peak_requests_per_s)}/s)."
        )
    elif analysis.levels:
        lines.append("No throughput plateau: requests/s still grew at the highest level.")
    return lines


def _little(analysis: LoadAnalysis) -> list[str]:
    """Whether Little's law held at every level, or where it did not."""
    lines: list[str] = []
    off = [lv for lv in analysis.levels if lv.little is not None and not lv.little.holds]
    checked = [lv for lv in analysis.levels if lv.little is not None]
    if checked and not off:
        worst = max(lv.little.error for lv in checked if lv.little is not None)
        lines.append(
            f"Little's law holds at every level (in flight ≈ the level's target, "
            f"at most {worst:.0%} off)."
        )
    for lv in off:
        assert lv.little is not None
        lines.append(
            f"Little's law is {lv.little.error:.0%} off at {_level_name(lv)} "
            f"({lv.little.in_flight:.1f} in flight against a target of "
            f"{lv.little.target:.1f}; tolerance {LITTLE_TOLERANCE:.0%}): the client did not "
            "hold the load it meant to, or the level was too short for its latency."
        )
    return lines


def _goodput(analysis: LoadAnalysis) -> list[str]:
    """The best goodput under the objectives asked for."""
    lines: list[str] = []
    slo = analysis.slo
    if slo.any:
        asked = ", ".join(
            part
            for part in (
                None if slo.ttft_ms is None else f"TTFT ≤ {format_ms(slo.ttft_ms)}",
                None if slo.tpot_ms is None else f"TPOT ≤ {format_ms(slo.tpot_ms)}",
            )
            if part
        )
        best = max(
            (lv for lv in analysis.levels if lv.goodput_per_s is not None),
            key=lambda lv: lv.goodput_per_s or 0.0,
            default=None,
        )
        if best is not None:
            lines.append(
                f"Goodput ({asked}): at most {_rate(best.goodput_per_s)} requests/s, at "
                f"{_level_name(best)} ({best.goodput_share or 0:.0%} of its requests)."
            )
    return lines


def _client_limits(analysis: LoadAnalysis) -> list[str]:
    """A sentence per level the client itself held back, with what would lift it."""
    lines: list[str] = []
    for lv in analysis.levels:
        load = lv.window.client
        if load is None or not load.saturated:
            continue
        reasons = load.reasons()
        said = reasons[0] if len(reasons) == 1 else ", ".join(reasons[:-1]) + " and " + reasons[-1]
        who = "" if load.processes == 1 else f" (the busiest of its {load.processes} workers)"
        wanted = processes_for(load)
        cores = os.cpu_count() or 1
        spread = f"`--processes {wanted}`" + (
            f" (this machine has {cores} cores; beyond them, `--ray` over more machines)"
            if wanted > cores
            else " or `--ray`"
        )
        together = (
            ""
            if load.read_together is None
            else f" {load.read_together:.1%} of its gaps between tokens were read together, "
            "each later token's own arrival lost."
        )
        lines.append(
            f"At {_level_name(lv)} the client{who}, not the server, shaped the numbers (*): "
            f"{said}. Its TTFT, inter-token gaps and throughput carry the client's own "
            f"waiting;{together} {spread} would spread the streams."
        )
    return lines


def _marked(lv: LevelStats) -> str:
    """The level's name, marked ``*`` where the client shaped it."""
    load = lv.window.client
    return _level_name(lv) + ("*" if load is not None and load.saturated else "")


def _cpu(lv: LevelStats) -> str:
    load = lv.window.client
    return "-" if load is None else f"{load.cpu_share:.0%}"


def render_load(
    analysis: LoadAnalysis, notes: Sequence[StepNote] = (), *, title: str = ""
) -> RenderableType:
    """A sweep's analysis as two terminal tables (latency, then throughput and errors)
    and its notes."""
    closed = not analysis.levels or analysis.levels[0].window.rate is None
    level = "streams" if closed else "rate"
    unit = _latency_unit(analysis)
    latency = _table([level, "TTFT p50", "p95", "p99", "TPOT p50", "p95", "E2E p50", "p95", "p99"])
    for lv in analysis.levels:
        latency.add_row(
            _level_name(lv),
            *(_number(lv.ttft_ms, q, unit) for q in ("p50", "p95", "p99")),
            *(_number(lv.tpot_ms, q, unit) for q in ("p50", "p95")),
            *(_number(lv.total_ms, q, unit) for q in ("p50", "p95", "p99")),
        )
    heads = [level, "reqs", "errors", "req/s", "tok/s", "sent/s", "goodput/s", "pool", "client"]
    throughput = _table(heads)
    for lv in analysis.levels:
        throughput.add_row(
            _marked(lv), str(lv.requests), f"{lv.error_rate:.0%}", _rate(lv.requests_per_s),
            _rate(lv.output_tokens_per_s), _rate(lv.sent_per_s), _rate(lv.goodput_per_s),
            _pct(lv.pool_wait_ms, "p95"), _pct(lv.client_delay_ms, "p95"),
        )  # fmt: skip
    parts: list[RenderableType] = []
    if title:
        parts += [Text(f"  {title}", style="bold"), Text("")]
    parts += [
        Text(f"  Latency by level, in {unit} (successful requests)"),
        Padding(latency, (0, 0, 0, 2)),
        Text(""),
        Text("  Throughput by level (counted over the level's window)"),
        Padding(throughput, (0, 0, 0, 2)),
        Text(""),
    ]
    parts += [Padding(Text(line), (0, 0, 0, 2)) for line in findings(analysis)]
    parts += [Padding(Text(f"Note: {n.text}", style="dim"), (0, 0, 0, 2)) for n in notes]
    parts.append(
        Padding(
            Text(
                "Pool: p95 of the time a request waited for a connection in the client; "
                "client: p95 of the client's own delay before a request left. Neither is "
                "the server's time; * marks a level the client itself shaped.",
                style="dim",
            ),
            (0, 0, 0, 2),
        )
    )
    return Group(*parts)


def _pdict(p: Percentiles | None) -> dict[str, float] | None:
    return None if p is None else {"p50": p.p50, "p95": p.p95, "p99": p.p99, "mean": p.mean}


def _level_dict(lv: LevelStats) -> dict[str, Any]:
    w = lv.window
    return {
        "label": w.label,
        "window": w.document(),
        "seconds": w.seconds,
        "requests": lv.requests,
        "failed": lv.failed,
        "error_rate": lv.error_rate,
        "ttft_ms": _pdict(lv.ttft_ms),
        "tpot_ms": _pdict(lv.tpot_ms),
        "total_ms": _pdict(lv.total_ms),
        "pool_wait_ms": _pdict(lv.pool_wait_ms),
        "server_ttft_ms": _pdict(lv.server_ttft_ms),
        "client_delay_ms": _pdict(lv.client_delay_ms),
        "requests_per_s": lv.requests_per_s,
        "output_tokens_per_s": lv.output_tokens_per_s,
        "sent_per_s": lv.sent_per_s,
        "asked_rate": w.rate,
        "sustained": lv.sustained,
        "littles_law": None
        if lv.little is None
        else {
            "in_flight": lv.little.in_flight,
            "throughput_x_latency": lv.little.predicted,
            "target": lv.little.target,
            "error": lv.little.error,
            "holds": lv.little.holds,
        },
        "goodput_per_s": lv.goodput_per_s,
        "goodput_share": lv.goodput_share,
        "failures": [{"code": f.code, "phase": f.phase, "count": f.count} for f in lv.failures],
    }


def load_to_dict(
    analysis: LoadAnalysis, *, notes: Sequence[StepNote] = (), run_id: str | None = None
) -> dict[str, Any]:
    """A sweep's analysis as the ``latdoc.load`` JSON document."""
    return {
        "schema": LOAD_SCHEMA,
        "run_id": run_id,
        "slo": {"ttft_ms": analysis.slo.ttft_ms, "tpot_ms": analysis.slo.tpot_ms},
        "levels": [_level_dict(lv) for lv in analysis.levels],
        "knee": None if analysis.knee is None else analysis.knee.window.label,
        "plateau": None if analysis.plateau is None else analysis.plateau.window.label,
        "peak_requests_per_s": analysis.peak_requests_per_s,
        "unloaded_ttft_ms": analysis.unloaded_ttft_ms,
        "findings": findings(analysis),
        "notes": [n.text for n in notes],
    }


def render_load_html(
    analysis: LoadAnalysis, notes: Sequence[StepNote] = (), *, title: str = ""
) -> str:
    """A sweep's analysis as a self-contained page: the tables and the TTFT and
    throughput plots."""
    from markupsafe import Markup

    from latdoc.report.pages import environment, load_throughput_svg, load_ttft_svg

    closed = not analysis.levels or analysis.levels[0].window.rate is None
    axis = "streams at once" if closed else "asked arrival rate"
    labels = [lv.window.label for lv in analysis.levels]
    ttft = [(lv.ttft_ms.p50, lv.ttft_ms.p95) if lv.ttft_ms else None for lv in analysis.levels]
    knee = None if analysis.knee is None else analysis.levels.index(analysis.knee)
    ttft_svg = load_ttft_svg(labels, ttft, knee, axis)
    rps = [lv.requests_per_s for lv in analysis.levels]
    good = [lv.goodput_per_s for lv in analysis.levels]
    plateau = None if analysis.plateau is None else analysis.levels.index(analysis.plateau)
    throughput_svg = load_throughput_svg(labels, rps, good, plateau, axis)
    rows = [
        {
            "level": _level_name(lv),
            "requests": lv.requests,
            "errors": f"{lv.error_rate:.0%}",
            "ttft": " / ".join(_pct(lv.ttft_ms, q) for q in ("p50", "p95", "p99")),
            "tpot": " / ".join(_pct(lv.tpot_ms, q) for q in ("p50", "p95", "p99")),
            "total": " / ".join(_pct(lv.total_ms, q) for q in ("p50", "p95", "p99")),
            "rps": _rate(lv.requests_per_s),
            "tps": _rate(lv.output_tokens_per_s),
            "sent": _rate(lv.sent_per_s),
            "goodput": _rate(lv.goodput_per_s),
            "pool": _pct(lv.pool_wait_ms, "p95"),
            "cpu": _cpu(lv),
        }
        for lv in analysis.levels
    ]
    return (
        environment()
        .get_template("load.html.j2")
        .render(
            title=title or "latdoc: under load",
            level_name="streams" if closed else "arrival rate",
            rows=rows,
            findings=findings(analysis),
            notes=[n.text for n in notes],
            ttft_plot=None if ttft_svg is None else Markup(ttft_svg),
            throughput_plot=None if throughput_svg is None else Markup(throughput_svg),
        )
    )


@dataclass(frozen=True)
class ShownLoad:
    """A sweep as ``latdoc load`` shows it (a :class:`latdoc.report.shown.Shown`), with
    the gates held against its baseline when there were any."""

    analysis: LoadAnalysis
    notes: tuple[StepNote, ...]
    run_id: str
    title: str
    gates: GateReport | None = None

    @property
    def page_kind(self) -> str:
        return "report"

    def document(self) -> dict[str, Any]:
        from latdoc.report import gates_to_dict

        document = load_to_dict(self.analysis, notes=self.notes, run_id=self.run_id)
        if self.gates is not None:
            document["gates"] = gates_to_dict(self.gates)
        return document

    def shown(self) -> tuple[RenderableType, ...]:
        from latdoc.report import render_gates

        table = render_load(self.analysis, self.notes, title=self.title)
        if self.gates is None:
            return (table,)
        return (table, render_gates(self.gates, ("baseline", "this run")))

    def page(self) -> str:
        return render_load_html(self.analysis, self.notes, title=self.title)

    def kept(self) -> None:
        return None
