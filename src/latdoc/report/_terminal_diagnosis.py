"""A diagnosis in the terminal: the verdict, where the time goes, each step's evidence,
the findings and the ranked remedies. Builds rich renderables; prints nothing.

Every word is said in the active language (:mod:`latdoc.i18n`): the report's own with
``_`` and :func:`~latdoc.i18n.say`, the data's (a finding's rule, a remedy's change) with
:func:`~latdoc.i18n.translate`."""

from __future__ import annotations

from collections.abc import Mapping

from rich.bar import Bar
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.analysis.kinds import spec_of
from latdoc.i18n import N_, say, translate
from latdoc.i18n import gettext as _
from latdoc.model import (
    Diagnosis,
    Finding,
    Kind,
    Remedy,
    RequestParts,
    SystemItem,
    cost_text,
)
from latdoc.report._console import side_by_side
from latdoc.report._layers import PARTING, distinct_layers
from latdoc.report._server import disagreement_texts, server_lines
from latdoc.report._system import NOT_READABLE
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
from latdoc.report.names import (
    SHAPES,
    format_ms,
    format_value,
    kind_colour,
    kind_name,
    kind_word,
    step_word,
)

_BAR_WIDTH = 32


def _kind_style(kind: Kind) -> str:
    return f"bold {kind_colour(kind)}"


def _indent(renderable: RenderableType, level: int = 1) -> Padding:
    return Padding(renderable, (0, 0, 0, 2 * level), expand=False)


_BLANK = Text("")


def _heading(text: str) -> Group:
    return Group(_BLANK, _indent(Text(text, style="bold")))


def _network_lines(d: Diagnosis) -> list[RenderableType]:
    n = d.network
    if n.get("setup_ms") is None and n.get("ttft_ms") is None:
        return [Text(_("not measured"), style="dim")]
    parts = []
    shown = {key for key, _label, _ms in distinct_layers(n)}
    for key, label in (
        ("dns_ms", "DNS"),
        ("connect_ms", "TCP"),
        ("proxy_connect_ms", N_("proxy CONNECT")),
        ("tls_ms", "TLS"),
        ("send_ms", N_("send")),
        ("wait_ms", N_("server wait")),
        ("ttfb_ms", N_("first byte")),
        ("first_event_ms", N_("first event")),
        ("ttft_ms", N_("first token")),
        ("first_tool_call_ms", N_("first tool call")),
    ):
        value = n.get(key)
        if key in PARTING and key not in shown:
            continue
        if value is not None:
            parts.append(Text.assemble((_(label), "dim"), " ", (format_ms(value), "bold")))
    lines: list[RenderableType] = [side_by_side(parts)]
    keepalive = keepalive_text(d)
    if keepalive is not None:
        lines.append(Text(keepalive))
    if d.network_check is not None:
        lines.append(Text(say("seed rule: {rule}", rule=translate(d.network_check.statement))))
    return lines


def reasoning_lines(r: Mapping[str, float | None]) -> list[RenderableType]:
    """Time to first reasoning, to first answer token, thinking time and tokens."""
    parts = []
    for key, label in (
        ("ttfr_ms", N_("first reasoning")),
        ("ttfa_ms", N_("first answer token")),
        ("reasoning_ms", N_("thinking")),
    ):
        value = r.get(key)
        if value is not None:
            parts.append(Text.assemble((_(label), "dim"), " ", (format_ms(value), "bold")))
    tokens = r.get("reasoning_tokens")
    if tokens is not None:
        parts.append(Text.assemble((_("reasoning tokens"), "dim"), " ", (f"{tokens:.0f}", "bold")))
    lines: list[RenderableType] = [side_by_side(parts)]
    n, total, hidden = r.get("reasoning_n"), r.get("requests_n"), r.get("hidden_n")
    if n is not None and total is not None:
        said = say(
            "{n:.0f} of {total:.0f} requests reasoned (medians over them; thinking over all)",
            n=n,
            total=total,
        )
        if hidden:
            said += say(
                "; {hidden:.0f} did not stream it: reported tokens × time per token",
                hidden=hidden,
            )
        lines.append(Text(said, style="dim"))
    return lines


def _length_lines(d: Diagnosis) -> list[RenderableType]:
    curve = d.length
    if curve is None:
        return [Text(_("not measured"), style="dim")]
    points = [
        Text.assemble(f"{p.prompt_tokens} → ", (format_ms(p.ttft_ms), "bold")) for p in curve.points
    ]
    prefill = (
        N_("prefill {ms} per 1K estimated tokens at the longest; curve {shape}")
        if curve.tokens_estimated
        else N_("prefill {ms} per 1K tokens at the longest; curve {shape}")
    )
    lines: list[RenderableType] = [
        Text(
            _("TTFT by prompt tokens (estimated from the prompts' characters):")
            if curve.tokens_estimated
            else _("TTFT by prompt tokens:"),
            style="dim",
        ),
        _indent(side_by_side(points)),
        Text(
            say(
                prefill,
                ms=format_ms(curve.prefill_ms_per_1k),
                shape=translate(SHAPES.get(curve.shape, curve.shape)),
            )
        ),
    ]
    if d.length_check is not None:
        lines.append(Text(length_rule_text(d.length_check)))
    longest = longest_ratio_text(d)
    if longest is not None:
        lines.append(Text(longest, style="dim"))
    return lines


def _load_lines(ld: Mapping[str, float | None]) -> list[RenderableType]:
    p50 = ld.get("ttft_p50_ms")
    if p50 is None:
        return [Text(_("not measured"), style="dim")]
    line = say("same-length TTFT p50 {ms}", ms=format_ms(p50))
    cv, spread = ld.get("ttft_cv"), ld.get("ttft_p95_over_p50")
    if cv is not None and spread is not None:
        line += f", CV {cv:.2f}, p95/p50 {spread:.2f}"
    lines: list[RenderableType] = [Text(line)]
    conc, ratio = ld.get("concurrent_ttft_p50_ms"), ld.get("concurrent_over_sequential")
    if conc is not None and ratio is not None:
        lines.append(
            Text(
                say(
                    "{n:.0f} at once: TTFT p50 {ms} ({ratio:.2f}× sequential)",
                    n=ld.get("concurrency") or 0,
                    ms=format_ms(conc),
                    ratio=ratio,
                )
            )
        )
    return lines


def _shares(shares_ms: Mapping[Kind, float], rest: float | None = None) -> Table:
    """Each kind's share of a typical request: name, duration, and a bar to scale; then
    what no kind adds, the rest of it, so the rows add up to the request."""
    rows = [
        (Text(kind_word(kind), style=kind_colour(kind)), ms, kind_colour(kind))
        for kind, ms in sorted(shares_ms.items(), key=lambda kv: -kv[1])
    ]
    if rest is not None and rest >= 0.5:
        healthy = kind_colour(Kind.HEALTHY)
        rows.append((Text(_("the rest of it"), style=healthy), rest, healthy))
    largest = max((ms for _, ms, _ in rows), default=0.0)
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    table.add_column(no_wrap=True)
    for name, ms, colour in rows:
        bar: RenderableType = ""
        if largest > 0 and ms > 0:
            bar = Bar(largest, 0, ms, width=_BAR_WIDTH, color=colour)
        table.add_row(name, format_ms(ms), bar)
    return table


_PART_COLOURS = {
    N_("network setup"): PHASE_COLOURS["connect"],
    N_("send"): PHASE_COLOURS["send"],
    N_("server wait"): PHASE_COLOURS["queue"],
    N_("prefill"): PHASE_COLOURS["wait"],
    N_("reasoning"): PHASE_COLOURS["reasoning"],
    N_("decode"): PHASE_COLOURS["stream"],
}


def _parts(parts: RequestParts) -> Table:
    """A request on a new connection, phase by phase, with bars to scale."""
    largest = max((ms for _, ms in parts.items()), default=0.0)
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    table.add_column(no_wrap=True)
    for name, ms in parts.items():
        bar: RenderableType = ""
        if largest > 0 and ms > 0:
            bar = Bar(largest, 0, ms, width=_BAR_WIDTH, color=_PART_COLOURS[name])
        table.add_row(Text(_(name), style=_PART_COLOURS[name]), format_ms(ms), bar)
    return table


def _finding(f: Finding) -> Group:
    head = Text.assemble(
        ("● ", kind_colour(f.kind)),
        (translate(f.title), "bold"),
        "  [",
        (kind_word(f.kind), kind_colour(f.kind)),
        "]  ",
        say("adds ~{ms}, ", ms=format_ms(f.share_ms)) if f.share_ms > 0 else "",
        say("~{ms} past healthy, ", ms=format_ms(f.excess_ms)) if f.past_healthy else "",
        say("confidence {p:.2f}", p=f.confidence),
        say(", n = {n}", n=f.n) if f.n is not None else "",
    )
    evidence = [
        Text.assemble((key, "dim"), " ", (format_value(key, value), "bold"))
        for key, value in f.evidence.items()
    ]
    return Group(
        head,
        _indent(Text.assemble((_("rule: "), "dim"), translate(f.rule)), 2),
        _indent(Text(_("evidence:"), style="dim"), 2),
        _indent(side_by_side(evidence), 3),
    )


def _remedy(i: int, r: Remedy) -> Group:
    head = Text.assemble(f"{i}. ", (translate(r.title), "bold"))
    gain = gain_text(r)
    measure: RenderableType
    if gain is not None:
        measure = Text(gain, style="green")
    else:
        measure = Text.assemble((unmeasured_text(r), "dim"), (r.verify_command or "", "bold"))
    # A wrapped line of code continues under its own first character, not at the margin.
    body: list[RenderableType] = [_indent(measure, 2)]
    if gain is not None and r.verify_command is not None:
        body.append(_indent(Text.assemble((_("confirm it: "), "dim"), r.verify_command), 2))
    body += [
        Padding(Text(line.lstrip()), (0, 0, 0, 4 + len(line) - len(line.lstrip())), expand=False)
        for line in translate(r.change).splitlines()
    ]
    effects = None if r.effects is None else r.effects.text()
    if effects is not None:
        body.append(_indent(Text.assemble((_("effects: "), "dim"), translate(effects)), 2))
    if r.tradeoff:
        body.append(_indent(Text.assemble((_("trade-off: "), "yellow"), translate(r.tradeoff)), 2))
    return Group(head, *body)


def _system_item(item: SystemItem) -> Group:
    """A failing host setting: what it is now, what it should be, and the command."""
    now = translate(item.current) if item.current is not None else _(NOT_READABLE)
    return Group(
        Text.assemble(
            ("✗ ", "red"), (translate(item.name), "bold"),
            f"  {now} → {translate(item.recommended)}  [",
            (_(", ").join(kind_word(k) for k in item.kinds), "dim"), "]",
        ),
        _indent(Text(translate(item.why), style="dim"), 2),
        _indent(Text.assemble((_("command: "), "dim"), (translate(item.command), "bold")), 2),
    )  # fmt: skip


def render_diagnosis(d: Diagnosis) -> RenderableType:
    """The whole diagnosis, top to bottom: verdict first, what to change last."""
    negligible = set(d.verdict.negligible)
    parts = _verdict_lines(d)
    parts += _where_the_time_goes(d, negligible)
    parts += _step_lines(d)
    parts += _findings_and_remedies(d, negligible)
    if d.notes:
        parts.append(_heading(_("Left out:")))
        parts += [
            _indent(
                Text.assemble((say("{step}: ", step=step_word(n.step)), "dim"), translate(n.text)),
                2,
            )
            for n in d.notes
        ]
    return Group(*parts)


def _verdict_lines(d: Diagnosis) -> list[RenderableType]:
    """The run in one line, the verdict, what contributes, what is negligible, where
    client and server disagree, and the request the shares are of."""
    v = d.verdict
    failed_style = "bold red" if d.failed else ""
    parts: list[RenderableType] = [
        _indent(
            Text.assemble(
                say(
                    "{requests} to {endpoint} (model {model}), ",
                    requests=translate(d.requests_text()),
                    endpoint=d.endpoint,
                    model=d.model,
                ),
                (say("{n} failed", n=d.failed), failed_style),
            )
        ),
        _indent(Text(translate(cost_text(d.cost, d.model)), style="dim"), 2),
        _BLANK,
        _indent(
            Text.assemble(
                (_("Verdict: "), "bold"),
                (kind_name(v.primary), _kind_style(v.primary)),
                say("   confidence {p:.2f}", p=shown_probability(v.confidence)),
            ),
        ),
    ]
    if (bank := bank_accuracy_text(v)) is not None:
        parts.append(_indent(Text(bank, style="dim"), 2))
    if (near := near_threshold_text(v)) is not None:
        parts.append(_indent(Text(near, style="yellow"), 2))
    if (held := reference_text(d)) is not None:
        parts.append(_indent(Text(held, style="dim"), 2))
    if v.contributing:
        contributing = Text(_("Contributing: "))
        for i, kind in enumerate(v.contributing):
            if i:
                contributing.append(_(", "))
            contributing.append(kind_word(kind), style=kind_colour(kind))
        parts.append(_indent(contributing))
    if v.negligible:
        negligible = _(", ").join(map(kind_word, v.negligible))
        parts.append(_indent(Text(_("Negligible here: ") + negligible)))
    for text in disagreement_texts(d.server):
        disagree = (_("Client and server disagree: "), "bold yellow")
        parts.append(_indent(Text.assemble(disagree, text)))
    for line in (workload_text(d), longer_prompt_text(d)):
        if line is not None:
            parts.append(_indent(Text(line)))
    return parts


def _where_the_time_goes(d: Diagnosis, negligible: set[Kind]) -> list[RenderableType]:
    """That request's phases, where the verdict's kind shows them; else what each kind
    that is not negligible adds to it."""
    if spec_of(d.verdict.primary).shows_request_parts and d.typical_request is not None:
        grown = d.workload is not None and d.workload.growth_ms > 0
        where = (
            N_(
                "Where the time goes: that request on a new connection ({ms}, median of each "
                "phase, prefill with the fitted growth):"
            )
            if grown
            else N_(
                "Where the time goes: that request on a new connection ({ms}, median of "
                "each phase):"
            )
        )
        return [
            _heading(say(where, ms=format_ms(d.typical_request.total_ms))),
            _indent(_parts(d.typical_request), 2),
        ]
    if shares := {k: ms for k, ms in d.shares_ms.items() if k not in negligible and ms > 0}:
        return [
            _heading(_("What each kind adds to that request:")),
            _indent(_shares(shares, d.rest_ms), 2),
        ]
    return []


def _step_lines(d: Diagnosis) -> list[RenderableType]:
    """Each step's numbers, the reasoning phase, and the server's own timing."""
    parts: list[RenderableType] = []
    steps = [
        (_("Step 1 — network"), _network_lines(d)),
        (_("Step 2 — input length"), _length_lines(d)),
        (_("Step 3 — fluctuation and load"), _load_lines(d.load)),
    ]
    if d.reasoning:
        steps.append((_("Reasoning — thinking before the answer"), reasoning_lines(d.reasoning)))
    for title, lines in steps:
        parts += [_heading(title), *(_indent(line, 2) for line in lines)]
    if d.server is not None:
        parts.append(_heading(_("The server's own timing:")))
        parts += [_indent(Text(line), 2) for line in server_lines(d.server)]
    return parts


def _findings_and_remedies(d: Diagnosis, negligible: set[Kind]) -> list[RenderableType]:
    """The findings that matter, those too small to, the ranked remedies and the client
    host's failing checks."""
    parts: list[RenderableType] = []
    found = [f for f in d.findings if f.kind not in negligible]
    if found:
        parts.append(_heading(_("Findings:")))
        parts += [_indent(_finding(f)) for f in found]
    small = [f for f in d.findings if f.kind in negligible]
    if small:
        parts.append(_heading(_("Negligible here (no remedies):")))
        bar = negligible_bar_text(d)
        if bar is not None:
            parts.append(_indent(Text(bar, style="dim"), 2))
        parts += [_indent(_finding(f)) for f in small]
    if d.remedies:
        if d.priorities is None:
            parts.append(_heading(say("Remedies, ranked for {scenario}:", scenario=d.scenario)))
        else:
            parts.append(_heading(_("Remedies:")))
            ranked = say("Ranked for: {priorities}", priorities=translate(d.priorities.text()))
            parts.append(_indent(Text(ranked, style="dim"), 2))
        parts += [_indent(_remedy(i, r)) for i, r in enumerate(d.remedies, 1)]
    if d.system:
        parts.append(_heading(_("On this client host (`latdoc system` lists every check):")))
        parts += [_indent(_system_item(i)) for i in d.system]
    return parts
