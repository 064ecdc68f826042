"""What ``latdoc probe`` shows of a series: the first request's waterfall, how the prompt
length was calibrated, and the summary of the series when there is more than one."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import RenderableType

    from latdoc.workload import ProbeRun


def render_probe(result: ProbeRun) -> RenderableType:
    """The series as the terminal shows it; ``result`` holds at least one trace."""
    from rich.console import Group
    from rich.text import Text

    from latdoc.analysis.repeats import summarize
    from latdoc.report import render_summary, render_waterfall

    traces, calibration = result.traces, result.calibration
    parts: list[RenderableType] = [render_waterfall(traces[0])]
    if calibration is not None:
        how = (
            "calibrated on the endpoint's usage"
            if calibration.measured
            else "the endpoint reports no usage, so 1 token per word was assumed"
        )
        parts.append(
            Text(
                f"  Prompt length {how}: {calibration.overhead:.0f} + "
                f"{calibration.per_word:.2f} tokens per word."
            )
        )
    if len(traces) > 1:
        parts += [Text(""), render_summary(summarize(traces))]
    return Group(*parts)
