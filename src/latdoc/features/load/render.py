"""``latdoc load`` shown: two tables per level in the terminal, a JSON document, a page.

The terminal view fits 80 columns: latency by level, then throughput by level,
then the knee, the plateau, Little's law and goodput in sentences. Where
``--find-max`` found an answer, the terminal and the page lead with it, and the page's
TTFT plot draws the SLO's limit and marks the level found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.analysis.gates import GateReport
from latdoc.features.load.analysis import (
    FindMax,
    LevelStats,
    LoadAnalysis,
    Percentiles,
    Slo,
    TurnRow,
    UserTurns,
    find_tail_knee,
    findings,
    level_name,
)
from latdoc.i18n import N_
from latdoc.model import cost_to_dict
from latdoc.records import StepNote
from latdoc.report.costs import CostRow, cost_block, cost_sentences
from latdoc.report.names import format_ms, format_rate

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


def _table(headers: Sequence[str]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for k, header in enumerate(headers):
        table.add_column(header, justify="left" if k == 0 else "right", no_wrap=True)
    return table


def _marked(lv: LevelStats) -> str:
    """The level's name, marked ``*`` where the client shaped it."""
    load = lv.window.client
    return level_name(lv) + ("*" if load is not None and load.saturated else "")


def _cpu(lv: LevelStats) -> str:
    load = lv.window.client
    return "-" if load is None else f"{load.cpu_share:.0%}"


def render_load(
    analysis: LoadAnalysis,
    notes: Sequence[StepNote] = (),
    *,
    title: str = "",
    model: str | None = None,
    found: FindMax | None = None,
    turns: UserTurns | None = None,
) -> RenderableType:
    """A sweep's analysis as two terminal tables (latency, then throughput and errors),
    the user turns of a replayed conversation or agent where ``turns`` holds them, what
    each level cost (where ``model`` is named: said unknown without a price) and its
    notes; led by ``--find-max``'s answer where ``found`` holds one."""
    closed = not analysis.levels or analysis.levels[0].window.rate is None
    level = "streams" if closed else "rate"
    unit = _latency_unit(analysis)
    latency = _table([level, "TTFT p50", "p95", "p99", "TPOT p50", "p95", "E2E p50", "p95", "p99"])
    for lv in analysis.levels:
        latency.add_row(
            level_name(lv),
            *(_number(lv.ttft_ms, q, unit) for q in ("p50", "p95", "p99")),
            *(_number(lv.tpot_ms, q, unit) for q in ("p50", "p95")),
            *(_number(lv.total_ms, q, unit) for q in ("p50", "p95", "p99")),
        )
    due = _table([level, "late p50", "p99", "TTFT p50", "p95", "p99", "E2E p50", "p95", "p99"])
    for lv in analysis.levels:
        if lv.due_ttft_ms is None:
            continue
        due.add_row(
            level_name(lv),
            *(_number(lv.late_ms, q, unit) for q in ("p50", "p99")),
            *(_number(lv.due_ttft_ms, q, unit) for q in ("p50", "p95", "p99")),
            *(_number(lv.due_total_ms, q, unit) for q in ("p50", "p95", "p99")),
        )
    heads = [level, "reqs", "errors", "req/s", "tok/s", "sent/s", "goodput/s", "pool", "client"]
    throughput = _table(heads)
    for lv in analysis.levels:
        throughput.add_row(
            _marked(lv), str(lv.requests), f"{lv.error_rate:.0%}",
            format_rate(lv.requests_per_s), format_rate(lv.output_tokens_per_s),
            format_rate(lv.sent_per_s), format_rate(lv.goodput_per_s),
            _pct(lv.pool_wait_ms, "p95"), _pct(lv.client_delay_ms, "p95"),
        )  # fmt: skip
    parts: list[RenderableType] = []
    if title:
        parts += [Text(f"  {title}", style="bold"), Text("")]
    if found is not None:
        parts += [
            Padding(Text(f"{found.headline}.", style="bold"), (0, 0, 0, 2)),
            Padding(Text(found.detail), (0, 0, 0, 2)),
            Text(""),
        ]
    parts += [
        Text(f"  Latency by level, in {unit} (successful requests), from each request's send"),
        Padding(latency, (0, 0, 0, 2)),
        Text(""),
    ]
    if due.row_count:
        parts += [
            Padding(
                Text(
                    f"From when each request was due, in {unit}: what a user behind the "
                    "generator waits (late: how late it left)"
                ),
                (0, 0, 0, 2),
            ),
            Padding(due, (0, 0, 0, 2)),
            Text(""),
        ]
    parts += [
        Text("  Throughput by level (counted over the level's window)"),
        Padding(throughput, (0, 0, 0, 2)),
        Text(""),
    ]
    if turns is not None:
        parts += [*_turns_block(turns, unit, analysis.slo), Text("")]
    if model is not None:
        parts += [cost_block(N_("Cost by level"), _cost_rows(analysis), model), Text("")]
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


def _turn_cells(row: TurnRow, unit: str, slo: Slo, cached: bool) -> list[str]:
    cells = [
        "all" if row.turn is None else str(row.turn + 1),
        str(row.turns),
        f"{row.calls:.1f}",
        *(_number(row.wait_ms, q, unit) for q in ("p50", "p95")),
        _value(row.answer_ttft_ms, unit),
        "-" if row.answer_tpot_ms is None else f"{row.answer_tpot_ms:.1f}",
    ]
    if cached:
        cells.append("-" if row.cached_tokens is None else f"{row.cached_tokens:,.0f}")
    if slo.any:
        cells.append("-" if row.met is None or not row.turns else f"{row.met / row.turns:.0%}")
    return cells


def _value(ms: float | None, unit: str) -> str:
    if ms is None:
        return "-"
    return f"{ms / 1000:.2f}" if unit == "s" else f"{ms:.0f}"


def _turns_block(turns: UserTurns, unit: str, slo: Slo) -> list[RenderableType]:
    """The user's turns: what the user waited, turn by turn, its tool calls in it."""
    heads = ["turn", "turns", "reqs", "wait p50", "p95", "answer TTFT", "TPOT"]
    heads += ["cached"] if turns.cached else []
    heads += ["met SLO"] if slo.any else []
    table = _table(heads)
    for row in (*turns.rows, turns.overall):
        table.add_row(*_turn_cells(row, unit, slo, turns.cached))
    said = [
        "Wait: from a turn's first request to its answer's first token, the model's tool "
        "calls and the tools' time in it; reqs: requests a turn took; the answer's own "
        "TTFT, TPOT (ms)" + (" and cached prompt tokens" if turns.cached else "") + ", p50."
    ]
    if slo.any:
        said.append("The SLO is judged on the wait and the answer's TPOT.")
    if turns.overall.failed:
        said.append(f"{turns.overall.failed} turns failed before their answer.")
    return [
        Text(f"  The user's turns, in {unit}"),
        Padding(table, (0, 0, 0, 2)),
        Padding(Text(" ".join(said), style="dim"), (0, 0, 0, 2)),
    ]


def user_turns_document(turns: UserTurns) -> dict[str, Any]:
    """A replay's user turns as JSON: each place in a session, then all turns."""

    def row(r: TurnRow) -> dict[str, Any]:
        return {
            "turn": r.turn,
            "turns": r.turns,
            "failed": r.failed,
            "requests_per_turn": r.calls,
            "wait_ms": _pdict(r.wait_ms),
            "answer_ttft_ms_p50": r.answer_ttft_ms,
            "answer_tpot_ms_p50": r.answer_tpot_ms,
            "answer_cached_tokens_p50": r.cached_tokens,
            "met_slo": r.met,
        }

    return {"by_turn": [row(r) for r in turns.rows], "all": row(turns.overall)}


def _pdict(p: Percentiles | None) -> dict[str, float] | None:
    return None if p is None else {"p50": p.p50, "p95": p.p95, "p99": p.p99, "mean": p.mean}


def _cost_rows(analysis: LoadAnalysis) -> list[CostRow]:
    return [CostRow(level_name(lv), lv.cost, lv.requests - lv.failed) for lv in analysis.levels]


def _level_dict(lv: LevelStats) -> dict[str, Any]:
    w = lv.window
    cost = CostRow(w.label, lv.cost, lv.requests - lv.failed)
    return {
        "cost": cost_to_dict(lv.cost),
        "cost_per_success": cost.per_success,
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
        "due_ttft_ms": _pdict(lv.due_ttft_ms),
        "due_total_ms": _pdict(lv.due_total_ms),
        "late_ms": _pdict(lv.late_ms),
        "warmup": lv.warmup,
        "steady": lv.steady,
        "warmup_ttft_ms": _pdict(lv.warmup_ttft_ms),
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
    analysis: LoadAnalysis,
    *,
    notes: Sequence[StepNote] = (),
    run_id: str | None = None,
    found: FindMax | None = None,
    turns: UserTurns | None = None,
) -> dict[str, Any]:
    """A sweep's analysis as the ``latdoc.load`` JSON document, with ``--find-max``'s
    answer where ``found`` holds one and a replay's user turns where ``turns`` does."""
    tail = find_tail_knee(analysis.levels)
    return {
        "schema": LOAD_SCHEMA,
        "run_id": run_id,
        "slo": {
            "ttft_ms": analysis.slo.ttft_ms,
            "tpot_ms": analysis.slo.tpot_ms,
            "from": "send" if analysis.slo.from_send else "due",
        },
        "levels": [_level_dict(lv) for lv in analysis.levels],
        "knee": None if analysis.knee is None else analysis.knee.window.label,
        "tail_knee": None if tail is None else tail.window.label,
        "plateau": None if analysis.plateau is None else analysis.plateau.window.label,
        "peak_requests_per_s": analysis.peak_requests_per_s,
        "unloaded_ttft_ms": analysis.unloaded_ttft_ms,
        "findings": findings(analysis),
        "notes": [n.text for n in notes],
        "find_max": None if found is None else {**found.document(), "sentence": found.sentence()},
        "user_turns": None if turns is None else user_turns_document(turns),
    }


def render_load_html(
    analysis: LoadAnalysis,
    notes: Sequence[StepNote] = (),
    *,
    title: str = "",
    model: str | None = None,
    found: FindMax | None = None,
    turns: UserTurns | None = None,
) -> str:
    """A sweep's analysis as a self-contained page: the tables (a replay's user turns
    among them, where ``turns`` holds them) and the TTFT, time per
    output token and throughput plots; where ``found`` holds ``--find-max``'s answer, the
    page's heading is that answer, and each plot of a metric it names draws its limit (the
    TTFT plot marks the level found)."""
    from markupsafe import Markup

    from latdoc.report.pages import (
        environment,
        load_throughput_svg,
        load_tpot_svg,
        load_ttft_svg,
    )

    closed = not analysis.levels or analysis.levels[0].window.rate is None
    axis = "streams at once" if closed else "asked arrival rate"
    unit = _latency_unit(analysis)
    labels = [lv.window.label for lv in analysis.levels]
    ttft = [(lv.ttft_ms.p50, lv.ttft_ms.p95) if lv.ttft_ms else None for lv in analysis.levels]
    knee = None if analysis.knee is None else analysis.levels.index(analysis.knee)
    objectives = () if found is None else found.objectives
    limits = [(o.text, o.limit_ms) for o in objectives if o.metric == "ttft"]
    due = [
        (lv.due_ttft_ms.p50, lv.due_ttft_ms.p95) if lv.due_ttft_ms else None
        for lv in analysis.levels
    ]
    ttft_svg = load_ttft_svg(
        labels, ttft, knee, axis, limits=limits, best=_found_level(analysis, found), due_ms=due
    )
    tpot = [(lv.tpot_ms.p50, lv.tpot_ms.p95) if lv.tpot_ms else None for lv in analysis.levels]
    tpot_limits = [(o.text, o.limit_ms) for o in objectives if o.metric == "tpot"]
    tpot_svg = load_tpot_svg(labels, tpot, axis, limits=tpot_limits)
    rps = [lv.requests_per_s for lv in analysis.levels]
    good = [lv.goodput_per_s for lv in analysis.levels]
    plateau = None if analysis.plateau is None else analysis.levels.index(analysis.plateau)
    throughput_svg = load_throughput_svg(labels, rps, good, plateau, axis)
    rows = [
        {
            "level": level_name(lv),
            "requests": lv.requests,
            "errors": f"{lv.error_rate:.0%}",
            "ttft": " / ".join(_pct(lv.ttft_ms, q) for q in ("p50", "p95", "p99")),
            "due_ttft": " / ".join(_pct(lv.due_ttft_ms, q) for q in ("p50", "p95", "p99")),
            "tpot": " / ".join(_pct(lv.tpot_ms, q) for q in ("p50", "p95", "p99")),
            "total": " / ".join(_pct(lv.total_ms, q) for q in ("p50", "p95", "p99")),
            "rps": format_rate(lv.requests_per_s),
            "tps": format_rate(lv.output_tokens_per_s),
            "sent": format_rate(lv.sent_per_s),
            "goodput": format_rate(lv.goodput_per_s),
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
            answer=found,
            level_name="streams" if closed else "arrival rate",
            rows=rows,
            findings=findings(analysis),
            notes=[n.text for n in notes],
            cost=[] if model is None else cost_sentences(_cost_rows(analysis), model),
            ttft_plot=None if ttft_svg is None else Markup(ttft_svg),
            throughput_plot=None if throughput_svg is None else Markup(throughput_svg),
            tpot_plot=None if tpot_svg is None else Markup(tpot_svg),
            turn_heads=[] if turns is None else _turn_heads(unit, analysis.slo, turns.cached),
            turn_rows=[]
            if turns is None
            else [
                _turn_cells(r, unit, analysis.slo, turns.cached)
                for r in (*turns.rows, turns.overall)
            ],
        )
    )


def _turn_heads(unit: str, slo: Slo, cached: bool) -> list[str]:
    heads = ["turn", "turns", "requests a turn", f"wait p50 ({unit})", f"wait p95 ({unit})"]
    heads += [f"answer TTFT p50 ({unit})", "answer TPOT p50 (ms)"]
    heads += ["answer's cached prompt tokens p50"] if cached else []
    return [*heads, "met the SLO"] if slo.any else heads


def _found_level(analysis: LoadAnalysis, found: FindMax | None) -> int | None:
    """Where among the levels the most load that met the SLO is, if it is one of them."""
    if found is None or found.best is None:
        return None
    for k, lv in enumerate(analysis.levels):
        level = lv.window.rate if found.by_rate else lv.window.concurrency
        if level is not None and float(level) == found.best:
            return k
    return None


@dataclass(frozen=True)
class ShownLoad:
    """A sweep as ``latdoc load`` shows it (a :class:`latdoc.report.shown.Shown`), with
    the gates held against its baseline when there were any."""

    analysis: LoadAnalysis
    notes: tuple[StepNote, ...]
    run_id: str
    title: str
    gates: GateReport | None = None
    model: str | None = None
    """The model, to say its cost is unknown by name where it has no price."""
    found: FindMax | None = None
    """``--find-max``'s answer, which the view leads with."""
    turns: UserTurns | None = None
    """A replayed conversation's or agent's user turns."""

    @property
    def page_kind(self) -> str:
        return "report"

    def document(self) -> dict[str, Any]:
        from latdoc.report import gates_to_dict

        document = load_to_dict(
            self.analysis, notes=self.notes, run_id=self.run_id, found=self.found, turns=self.turns
        )
        if self.gates is not None:
            document["gates"] = gates_to_dict(self.gates)
        return document

    def shown(self) -> tuple[RenderableType, ...]:
        from latdoc.report import render_gates

        table = render_load(
            self.analysis, self.notes, title=self.title, model=self.model, found=self.found,
            turns=self.turns,
        )  # fmt: skip
        if self.gates is None:
            return (table,)
        return (table, render_gates(self.gates, ("baseline", "this run")))

    def page(self) -> str:
        return render_load_html(
            self.analysis, self.notes, title=self.title, model=self.model, found=self.found,
            turns=self.turns,
        )  # fmt: skip

    def kept(self) -> None:
        return None
