"""``--remedy reasoning-effort``: reasoning as the requests ask today, against a lower
effort (Anthropic: a thinking budget; a preset with a thinking switch, such as
DashScope's ``enable_thinking``: thinking off, ``--reasoning-effort none``), judged on
the whole request."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_REASONING_EFFORT
from latdoc.features.verify.arms import base_arm
from latdoc.features.verify.experiments._spec import Argument, Experiment
from latdoc.features.verify.send import Arm
from latdoc.probe import merge_fields
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan

TODAY = "reasoning as the requests ask today"


@dataclass(frozen=True)
class ReasoningEffortOptions:
    reasoning_effort: str = "low"
    """The effort arm B asks for."""


def _check(plan: Plan, options: ReasoningEffortOptions) -> None:
    plan.endpoint.reasoning_fields(options.reasoning_effort)


def _describe(plan: Plan, options: ReasoningEffortOptions) -> tuple[str, str]:
    return TODAY, f"reasoning effort {options.reasoning_effort}"


def _arms(
    plan: Plan, options: ReasoningEffortOptions, calibration: TokenCalibration
) -> tuple[Arm, Arm]:
    ep = plan.endpoint
    asked = ep.reasoning_fields(options.reasoning_effort)
    lighter = replace(ep, extra_body=merge_fields(ep.extra_body, asked))
    _, effort = _describe(plan, options)
    base = base_arm(plan, calibration)
    return (
        replace(base, label=TODAY, warmup_trials=1),
        replace(base, name="B", label=f"{effort}: {asked}", endpoint=lighter),
    )


REASONING_EFFORT = Experiment(
    name=VERIFY_REASONING_EFFORT,
    summary="a lower reasoning effort",
    options=ReasoningEffortOptions,
    describe=_describe,
    arms=_arms,
    arguments=(
        Argument(
            "--reasoning-effort",
            "reasoning-effort: the effort B asks for (default %(default)s; "
            "Anthropic: a thinking budget, none disabling it)",
            default=ReasoningEffortOptions.reasoning_effort,
            metavar="EFFORT",
            choices=("none", "minimal", "low", "medium", "high"),
        ),
    ),
    check=_check,
    headline="total",
)
