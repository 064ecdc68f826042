"""The user's checks shown: a small table (arm, passed/total, rate, 95% interval), the
test of the difference, the cases each arm failed (the first few), and the
``checks`` section of verify's document. Nothing here writes."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.analysis.policy import ALPHA
from latdoc.features.verify.checks.analysis import (
    BETTER,
    WORSE,
    ArmChecks,
    CheckReport,
    Judged,
)
from latdoc.features.verify.checks.cases import NORMALISATION
from latdoc.report import format_p

TEST = "McNemar's exact test"
FAILING_SHOWN = 5
"""Failing cases named on the screen per arm; the document names them all, each with
why it failed."""


def checks_clause(report: CheckReport) -> str:
    """What the checks say, for the verdict line: how each arm did and the test."""
    a, b = report.a, report.b
    if b.total == 0:
        return "none of your checks was judged"
    if report.quality is None:
        return f"B answered as A did in {b.passed} of {b.total} of your checks"
    counts = f"A passed {a.passed}/{a.total}, B {b.passed}/{b.total}"
    if report.p_value is None:
        return f"no difference in your checks: {counts} (none passed in one arm alone)"
    said = {
        WORSE: "fails more of your checks",
        BETTER: "passes more of your checks",
    }.get(report.quality, "no significant difference in your checks")
    return f"{said}: {counts} ({format_p(report.p_value)}, {TEST})"


def render_checks(report: CheckReport) -> RenderableType:
    """The table of both arms, the test, what ``same_as_a`` counts, the failing cases."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for header in ("arm", "passed", "rate", "95% CI"):
        table.add_column(header, justify="left" if header == "arm" else "right")
    for name, arm in (("A", report.a), ("B", report.b)):
        table.add_row(name, f"{arm.passed}/{arm.total}", _share(arm.rate), _interval(arm))
    lines: list[RenderableType] = [
        Text(f"  Your checks ({report.source}: {_sent(report)})"),
        Padding(table, (0, 0, 0, 2)),
    ]
    if report.quality is not None:
        lines.append(Text(f"  {_test_line(report)}"))
    if report.against_a:
        lines.append(
            Text(
                f"  {report.against_a} same_as_a case{'s' if report.against_a != 1 else ''}: B's "
                f"answer against A's ({NORMALISATION}), counted for B only: A agrees with "
                "itself."
            )
        )
    for name, arm in (("A", report.a), ("B", report.b)):
        if arm.failing:
            lines.append(Text(f"  Failing in {name}: {_named(arm.failing)}"))
    return Group(*lines)


def checks_to_dict(report: CheckReport) -> dict[str, Any]:
    """The ``checks`` section of verify's document."""
    return {
        "file": report.source,
        "cases": report.cases,
        "checked": report.checked,
        "left_out": report.left_out,
        "normalisation": NORMALISATION,
        "same_as_a": report.against_a,
        "same_as_a_counts_for": "B",
        "arms": {"A": _arm_dict(report.a), "B": _arm_dict(report.b)},
        "test": TEST,
        "a_only_passed": report.only_a,
        "b_only_passed": report.only_b,
        "p_value": report.p_value,
        "alpha": ALPHA,
        "quality": report.quality,
        "summary": checks_clause(report),
    }


def _arm_dict(arm: ArmChecks) -> dict[str, Any]:
    return {
        "passed": arm.passed,
        "total": arm.total,
        "rate": arm.rate,
        "interval": None if arm.interval is None else list(arm.interval),
        "failing": [{"id": j.case, "why": j.why} for j in arm.failing],
    }


def _sent(report: CheckReport) -> str:
    sent = f"{report.checked} of {report.cases} cases sent in both arms"
    if report.left_out:
        sent += f", {report.left_out} not judged"
    return sent


def _test_line(report: CheckReport) -> str:
    if report.p_value is None:
        return "No case passed in one arm and failed in the other."
    differ = (
        f"{report.only_a} passed in A and failed in B, {report.only_b} the other way "
        f"({format_p(report.p_value)}, {TEST}; significant below {ALPHA:g})"
    )
    return f"Of the cases both arms can fail, {differ}."


def _share(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def _interval(arm: ArmChecks) -> str:
    ci = arm.interval
    return "–" if ci is None else f"{ci[0]:.0%}–{ci[1]:.0%}"


def _named(failing: tuple[Judged, ...]) -> str:
    shown = ", ".join(j.case for j in failing[:FAILING_SHOWN])
    more = len(failing) - FAILING_SHOWN
    return shown if more <= 0 else f"{shown} and {more} more"
