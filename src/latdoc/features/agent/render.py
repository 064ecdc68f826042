"""What ``latdoc diagnose --from-otlp`` shows of an agent's run, before the diagnosis of
its model calls: where the run's wall-clock time went, what holds the agent back, its
tools, its context's growth and what the context remedies would save, turn by turn.

Nothing here writes: the command prints what these return.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from latdoc.analysis.stats import Slope
from latdoc.features.agent.analysis import AgentRun, ContextRemedy, ranked_remedies
from latdoc.features.diagnose import DiagnosisRun, ShownDiagnosis
from latdoc.i18n import N_, Message, translate
from latdoc.model import Kind
from latdoc.report.names import format_ms, kind_name

if TYPE_CHECKING:
    from rich.console import RenderableType

_PARTS = {
    "model": N_("its model calls"),
    "tools": N_("its tools"),
    "agent": N_("the agent's own work between calls"),
}


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def agent_document(run: AgentRun, model_kind: Kind | None = None) -> dict[str, Any]:
    """The run as JSON: every duration in ms, shares of the wall clock as fractions; the
    run's verdict where the kind its model calls' diagnosis named is told."""

    def remedy(r: ContextRemedy) -> dict[str, Any]:
        return {
            "name": r.name,
            "tokens_left_out": r.tokens_left_out,
            "saving_ms": r.saving_ms,
            "saving_low_ms": r.low_ms,
            "saving_high_ms": r.high_ms,
        }

    def slope(s: Slope | None) -> dict[str, float] | None:
        return None if s is None else {"value": s.slope, "low": s.low, "high": s.high}

    return {
        "wall_ms": run.wall_ms,
        "model_ms": run.model_ms,
        "tool_ms": run.tool_ms,
        "agent_ms": run.agent_ms,
        "shares": {
            "model": run.share(run.model_ms),
            "tools": run.share(run.tool_ms),
            "agent": run.share(run.agent_ms),
        },
        "holds_back": run.holds_back,
        "verdict": None if model_kind is None else str(run.verdict(model_kind)),
        "parallel_tool_saving_ms": run.parallel_saving_ms,
        "model_calls": run.model_calls,
        "tool_calls": run.tool_calls,
        "tools": [{"name": t.name, "calls": t.calls, "total_ms": t.total_ms} for t in run.tools],
        "turns": [
            {
                "wall_ms": t.wall_ms,
                "model_ms": t.model_ms,
                "tool_ms": t.tool_ms,
                "agent_ms": t.agent_ms,
                "model_calls": t.model_calls,
                "tool_calls": t.tool_calls,
                "prompt_tokens": t.prompt_tokens,
                "ttft_ms": t.ttft_ms,
            }
            for t in run.turns
        ],
        "context": {
            "growth_tokens_per_turn": slope(run.growth),
            "ttft_ms_per_prompt_token": slope(run.token_cost),
            "noticeable": run.context_noticeable,
            "cached_calls": run.cached_calls,
            "cached_prompt_tokens": run.cached_tokens,
            "cached_ttft_ms_p50": run.cached_ttft_ms,
            "uncached_ttft_ms_p50": run.uncached_ttft_ms,
            "prompt_tokens": run.prompt_tokens,
            "remedies": [remedy(r) for r in run.remedies],
        },
        "remedies": [
            {
                "name": r.name,
                "subject": r.subject or None,
                "saving_ms": r.saving_ms,
                "saving_low_ms": r.low_ms,
                "saving_high_ms": r.high_ms,
                "at_most_ms": r.at_most_ms,
            }
            for r in ranked_remedies(run)
        ],
    }


def _verdict_line(run: AgentRun, model_kind: Kind | None) -> Message:
    """The kind of slow that holds the run back and the part of its wall clock that does."""
    part = {"model": run.model_ms, "tools": run.tool_ms, "agent": run.agent_ms}[run.holds_back]
    if model_kind is None:
        return Message("What holds it back: {part}", part=Message.of(_PARTS[run.holds_back]))
    return Message(
        "Verdict for the run: {kind} — {part} held it back ({share} of its wall clock)",
        kind=kind_name(run.verdict(model_kind)),
        part=Message.of(_PARTS[run.holds_back]),
        share=_pct(run.share(part)),
    )


def agent_lines(run: AgentRun, model_kind: Kind | None = None) -> list[str]:
    """The run in sentences, as the terminal and the page say it: the critical path, the
    kind of slow that holds the agent back (``agent`` where its tools or its own work do,
    else ``model_kind``: the kind the diagnosis of its model calls named), its tools, and
    its context."""
    lines: list[str] = [
        Message(
            "Agent run: {turns} user turns, {calls} model calls, {tools} tool calls, "
            "{wall} of wall-clock time",
            turns=len(run.turns),
            calls=run.model_calls,
            tools=run.tool_calls,
            wall=format_ms(run.wall_ms),
        ),
        Message(
            "Where it went: model calls {model} ({model_share}), tools {tool} "
            "({tool_share}), the agent itself {agent} ({agent_share})",
            model=format_ms(run.model_ms),
            model_share=_pct(run.share(run.model_ms)),
            tool=format_ms(run.tool_ms),
            tool_share=_pct(run.share(run.tool_ms)),
            agent=format_ms(run.agent_ms),
            agent_share=_pct(run.share(run.agent_ms)),
        ),
        _verdict_line(run, model_kind),
    ]
    for tool in run.tools:
        lines.append(
            Message(
                "  tool {name}: {calls} calls, {total} ({share} of the run)",
                name=tool.name,
                calls=tool.calls,
                total=format_ms(tool.total_ms),
                share=_pct(run.share(tool.total_ms)),
            )
        )
    if run.parallel_saving_ms > 0:
        lines.append(
            Message(
                "Tool calls of one answer ran one after another: run at once, they would "
                "save {saving}",
                saving=format_ms(run.parallel_saving_ms),
            )
        )
    lines += _context_lines(run)
    lines += _remedy_lines(run)
    return lines


def agent_blocks(run: AgentRun, model_kind: Kind | None = None) -> tuple[RenderableType, ...]:
    """The terminal view of the run: the critical path first, then context and turns."""
    from rich import box
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    lines = agent_lines(run, model_kind)
    blocks: list[RenderableType] = [
        Padding(Text("\n".join(translate(line) for line in lines)), (0, 0, 0, 2))
    ]
    # Milliseconds without their unit, which the heads carry: eight columns fit 80.
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    heads = [N_("turn"), N_("wall ms"), N_("model ms"), N_("tools ms"), N_("agent ms")]
    heads += [N_("calls"), N_("prompt"), N_("TTFT ms")]
    for k, head in enumerate(heads):
        table.add_column(translate(head), justify="left" if k == 0 else "right", no_wrap=True)
    for n, turn in enumerate(run.turns, 1):
        table.add_row(
            str(n),
            *(f"{ms:,.0f}" for ms in (turn.wall_ms, turn.model_ms, turn.tool_ms, turn.agent_ms)),
            f"{turn.model_calls} + {turn.tool_calls}",
            "-" if turn.prompt_tokens is None else f"{turn.prompt_tokens:,}",
            "-" if turn.ttft_ms is None else f"{turn.ttft_ms:,.0f}",
        )
    blocks.append(Padding(table, (0, 0, 0, 2)))
    blocks.append(
        Padding(
            Text(
                translate(
                    N_(
                        "calls: model + tool calls of the turn; prompt and TTFT: its first "
                        "model call's prompt tokens and time to first token"
                    )
                )
            ),
            (0, 0, 0, 2),
        )
    )
    return tuple(blocks)


def agent_waterfall_svg(run: AgentRun) -> str | None:
    """The run's model and tool calls as bars on one time axis, one row each in the order
    they began, a model call split at its first token; each user turn a band behind them.
    Bars carry SVG ids ``agent-<row>-<part>`` (``wait``, ``stream``, ``tool``)."""
    if not run.bars:
        return None
    from matplotlib.patches import Patch

    from latdoc.report._figure import figure_svg, new_figure, plot_style, rows_on_a_time_axis
    from latdoc.report._theme import PHASE_COLOURS, STEP_COLOURS

    colours = {"wait": PHASE_COLOURS["wait"], "stream": PHASE_COLOURS["stream"]}
    colours["tool"] = PHASE_COLOURS["connect"]
    bars = run.bars
    origin = run.turns[0].start_ns
    with plot_style():
        figure = new_figure(1.4 + 0.22 * len(bars))
        ax = figure.add_subplot()
        for n, turn in enumerate(run.turns):
            ax.axvspan(
                (turn.start_ns - origin) / 1e6,
                (turn.end_ns - origin) / 1e6,
                color=STEP_COLOURS[n % 2],
                alpha=0.07,
                lw=0,
                gid=f"agent-turn-{n}",
            )
        for row, bar in enumerate(bars):
            parts = [("tool", bar.start_ms, bar.end_ms)]
            if bar.role == "model":
                split = bar.end_ms if bar.first_token_ms is None else bar.first_token_ms
                parts = [("wait", bar.start_ms, split), ("stream", split, bar.end_ms)]
            for part, start, end in parts:
                if end <= start:
                    continue
                (patch,) = ax.barh([row], [end - start], left=[start], height=0.7,
                                   color=colours[part]).patches  # fmt: skip
                patch.set_gid(f"agent-{row}-{part}")
        labels = [f"{bar.turn + 1} · {bar.label}" for bar in bars]
        ax.set_yticks(range(len(bars)), labels, fontsize=8)
        rows_on_a_time_axis(ax, len(bars))
        ax.set_xlabel("time from the run's start")
        handles = [Patch(color=colours[p]) for p in ("wait", "stream", "tool")]
        names = ["model: before its first token", "model: streaming", "tool"]
        figure.legend(handles, names, loc="outside upper left", ncols=3)
        return figure_svg(figure, "The agent's run", "agent-waterfall")


_REMEDIES = {
    "parallel": N_("run the tool calls of one answer at once"),
    "window": N_("keep a window of the last 2 turns of context"),
    "prefix": N_("cache the prompt's prefix (each call reusing the last one's)"),
}


def _remedy_lines(run: AgentRun) -> list[str]:
    ranked = ranked_remedies(run)
    if not ranked:
        return []
    lines: list[str] = [N_("Remedies for the agent, largest saving first:")]
    for n, remedy in enumerate(ranked, 1):
        if remedy.name == "tool":
            lines.append(
                Message(
                    "  {n}. make the tool {tool} faster or cache its results: it saves at "
                    "most its {total}",
                    n=n,
                    tool=remedy.subject,
                    total=format_ms(remedy.at_most_ms),
                )
            )
            continue
        lines.append(
            Message(
                "  {n}. {remedy}: saves {saving} (95%: {low} to {high})",
                n=n,
                remedy=Message.of(_REMEDIES[remedy.name]),
                saving=format_ms(remedy.saving_ms),
                low=format_ms(remedy.low_ms),
                high=format_ms(remedy.high_ms),
            )
            if remedy.name != "parallel"
            else Message(
                "  {n}. {remedy}: saves {saving}, measured",
                n=n,
                remedy=Message.of(_REMEDIES[remedy.name]),
                saving=format_ms(remedy.saving_ms),
            )
        )
    return lines


def _context_lines(run: AgentRun) -> list[str]:
    prompts = [t.prompt_tokens for t in run.turns if t.prompt_tokens is not None]
    if len(prompts) < 2:
        return []
    lines: list[str] = []
    growth = run.growth
    grew = Message(
        "Context: a turn's first prompt went from {first:,} to {last:,} tokens",
        first=prompts[0],
        last=prompts[-1],
    )
    if growth is not None:
        grew = Message(
            "{grew}, {slope:+,.0f} tokens a turn (95%: {low:,.0f} to {high:,.0f})",
            grew=grew,
            slope=growth.slope,
            low=growth.low,
            high=growth.high,
        )
    lines.append(grew)
    if run.cached_calls:
        lines.append(
            Message(
                "  the provider served {cached:,} of {prompt:,} prompt tokens from its cache "
                "({calls} of {total} calls)",
                cached=run.cached_tokens,
                prompt=run.prompt_tokens,
                calls=run.cached_calls,
                total=run.model_calls,
            )
        )
    if run.cached_ttft_ms is not None and run.uncached_ttft_ms is not None:
        lines.append(
            Message(
                "  TTFT p50 of the calls with a cached prefix {cached}, of those without {fresh}",
                cached=format_ms(run.cached_ttft_ms),
                fresh=format_ms(run.uncached_ttft_ms),
            )
        )
    cost = run.token_cost
    if cost is None or cost.low <= 0:
        lines.append(
            Message(
                "  no remedy's saving can be given: TTFT did not rise measurably with the "
                "prompt over these {calls} calls",
                calls=run.model_calls,
            )
        )
        return lines
    lines.append(
        Message(
            "  a prompt token costs {cost} of TTFT (95%: {low} to {high})",
            cost=format_ms(cost.slope),
            low=format_ms(cost.low),
            high=format_ms(cost.high),
        )
    )
    named = {
        "window": N_("a window of the last 2 turns"),
        "reset": N_("a fresh context each turn"),
        "prefix": N_("a cached prefix (each prompt reusing the last one's)"),
    }
    for remedy in run.remedies:
        if remedy.saving_ms is None or remedy.low_ms is None or remedy.high_ms is None:
            continue
        lines.append(
            Message(
                "  {remedy}: {tokens:,} prompt tokens fewer, saves {saving} of TTFT over "
                "the run (95%: {low} to {high}; {share} of it)",
                remedy=Message.of(named[remedy.name]),
                tokens=remedy.tokens_left_out,
                saving=format_ms(remedy.saving_ms),
                low=format_ms(remedy.low_ms),
                high=format_ms(remedy.high_ms),
                share=_pct(run.share(remedy.saving_ms)),
            )
        )
    if run.context_noticeable:
        lines.append(N_("  the context's growth is a noticeable share of the run"))
    return lines


@dataclass(frozen=True)
class ShownAgentDiagnosis:
    """An agent's run and the diagnosis of its model calls, as the command shows them."""

    agent: AgentRun
    diagnosis: ShownDiagnosis

    @property
    def run(self) -> DiagnosisRun:
        return self.diagnosis.run

    @property
    def page_kind(self) -> str:
        return self.diagnosis.page_kind

    def document(self) -> dict[str, Any]:
        return {
            **self.diagnosis.document(),
            "agent": agent_document(self.agent, self.model_kind),
        }

    @property
    def model_kind(self) -> Kind:
        """The kind of slow the diagnosis of the run's model calls named."""
        return self.diagnosis.run.diagnosis.verdict.primary

    def shown(self) -> tuple[RenderableType, ...]:
        return (*agent_blocks(self.agent, self.model_kind), *self.diagnosis.shown())

    def page(self) -> str:
        from latdoc.report import render_html

        run = self.diagnosis.run
        figure = (
            translate(N_("The agent's run: model calls and tools on one time axis")),
            agent_waterfall_svg(self.agent),
            translate(
                Message.joined(
                    "; ",
                    [
                        N_(
                            "Each row is a model call (waiting for its first token, then "
                            "streaming) or a tool's execution, from the run's start, the "
                            "bands the user turns"
                        ),
                        *(line.strip() for line in agent_lines(self.agent, self.model_kind)),
                    ],
                )
            ),
            translate(N_("No model or tool call was recorded.")),
        )
        return render_html(run.diagnosis, run.samples, lead_figures=(figure,))

    def kept(self) -> None:
        return None
