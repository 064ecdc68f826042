"""``verify --remedy conversation`` shown: a table of strategies, a plot of TTFT by turn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.features.verify.conversation.analysis import StrategyOutcome
from latdoc.report import format_p
from latdoc.report.names import format_ms

CONVERSATION_SCHEMA = "latdoc.conversation/1"


def _last(values: Sequence[float | None]) -> float | None:
    return next((v for v in reversed(values) if v is not None), None)


def _saving(o: StrategyOutcome) -> str:
    if o.saving_ms is None:
        return "-"
    ci = "" if o.saving_ci_ms is None else f" ({_ms(o.saving_ci_ms[0])}…{_ms(o.saving_ci_ms[1])})"
    return f"{_ms(o.saving_ms)}{ci}"


def _ms(value: float) -> str:
    return ("−" if value < 0 else "") + format_ms(abs(value))


def conversation_rows(outcomes: Sequence[StrategyOutcome]) -> list[dict[str, str]]:
    """The table's cells, for the terminal and the page alike."""
    return [
        {
            "strategy": o.strategy,
            "first": format_ms(next((v for v in o.ttft_by_turn if v is not None), None)),
            "last": format_ms(_last(o.ttft_by_turn)),
            "saving": _saving(o),
            "p": "-" if o.p_adjusted is None else format_p(o.p_adjusted).removeprefix("p = "),
            "verdict": "-" if o.strategy == "keep" else o.verdict,
            "total": format_ms(o.total_ms),
            "tokens": "-" if o.prompt_tokens is None else f"{o.prompt_tokens:,}",
            "summaries": str(o.summary_calls),
        }
        for o in outcomes
    ]


def verdict_sentence(o: StrategyOutcome, keep: StrategyOutcome | None) -> str:
    """One strategy against keeping everything, in words, with its interval."""
    if o.saving_ms is None:
        return f"{o.strategy}: too few turns answered in both to compare"
    ci = (
        ""
        if o.saving_ci_ms is None
        else (f"95% CI {_ms(o.saving_ci_ms[0])} … {_ms(o.saving_ci_ms[1])}, ")
    )
    p = format_p(o.p_adjusted) if o.p_adjusted is not None else "no difference at any turn"
    what = "saves" if o.saving_ms >= 0 else "adds"
    line = (
        f"{o.strategy}: {o.verdict} — {what} {format_ms(abs(o.saving_ms))} of TTFT a turn "
        f"({ci}{p}, {o.turns_compared} turns)"
    )
    if keep is not None:
        line += f"; total time {_ms(o.total_ms - keep.total_ms)}"
        if o.prompt_tokens is not None and keep.prompt_tokens is not None:
            fewer = keep.prompt_tokens - o.prompt_tokens
            line += f", {abs(fewer):,} {'fewer' if fewer >= 0 else 'more'} prompt tokens"
    return line


def render_conversation(
    outcomes: Sequence[StrategyOutcome],
    *,
    turns: int,
    descriptions: Mapping[str, str],
    dropped: Mapping[str, str],
) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for header, justify in (
        ("strategy", "left"),
        ("TTFT turn 1", "right"),
        (f"turn {turns}", "right"),
        ("total time", "right"),
        ("tokens sent", "right"),
        ("summaries", "right"),
    ):
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in conversation_rows(outcomes):
        table.add_row(
            row["strategy"], row["first"], row["last"], row["total"], row["tokens"],
            row["summaries"],
        )  # fmt: skip
    keep = next((o for o in outcomes if o.strategy == "keep"), None)
    lines: list[RenderableType] = [Text(f"  The same {turns}-turn chat, held by each strategy:")]
    lines += [Text(f"    {name}: {text}") for name, text in descriptions.items()]
    lines += [Text(""), Padding(table, (0, 0, 0, 2)), Text("")]
    for o in outcomes:
        if o.strategy != "keep":
            lines.append(Text(f"  {verdict_sentence(o, keep)}."))
            lines.append(Text(f"    It dropped {dropped.get(o.strategy, 'nothing')}.", style="dim"))
    tested = sum(1 for o in outcomes if o.p_value is not None)
    lines.append(
        Text(
            "  TTFT saved a turn: paired by turn with keeping everything, over the turns "
            "where the strategy sent a different prompt (Wilcoxon signed-rank "
            f"p, Holm-adjusted over the {tested} strategies tested); total time and tokens "
            "include the summaries a strategy asked the model for.",
            style="dim",
        )
    )
    return Group(*lines)


def conversation_to_dict(
    outcomes: Sequence[StrategyOutcome],
    *,
    turns: int,
    descriptions: Mapping[str, str],
    dropped: Mapping[str, str],
    run_ids: Mapping[str, str],
) -> dict[str, Any]:
    return {
        "schema": CONVERSATION_SCHEMA,
        "turns": turns,
        "strategies": [
            {
                "strategy": o.strategy,
                "description": descriptions.get(o.strategy),
                "dropped": dropped.get(o.strategy),
                "run_id": run_ids.get(o.strategy),
                "ttft_ms_by_turn": list(o.ttft_by_turn),
                "prompt_tokens_by_turn": list(o.prompt_tokens_by_turn),
                "total_ms": o.total_ms,
                "prompt_tokens": o.prompt_tokens,
                "summary_calls": o.summary_calls,
                "failed": o.failed,
                "saving_ms": o.saving_ms,
                "saving_ci_ms": None if o.saving_ci_ms is None else list(o.saving_ci_ms),
                "p_value": o.p_value,
                "p_adjusted": o.p_adjusted,
                "verdict": None if o.strategy == "keep" else o.verdict,
            }
            for o in outcomes
        ],
    }


def render_conversation_html(
    outcomes: Sequence[StrategyOutcome],
    *,
    turns: int,
    descriptions: Mapping[str, str],
    dropped: Mapping[str, str],
) -> str:
    from markupsafe import Markup

    from latdoc.report.pages import conversation_svg, environment

    svg = conversation_svg([(o.strategy, o.ttft_by_turn) for o in outcomes])
    return (
        environment()
        .get_template("conversation.html.j2")
        .render(
            title=f"latdoc: a {turns}-turn conversation, strategy by strategy",
            turns=turns,
            rows=conversation_rows(outcomes),
            descriptions=descriptions,
            dropped={k: v for k, v in dropped.items() if k != "keep"},
            plot=None if svg is None else Markup(svg),
        )
    )
