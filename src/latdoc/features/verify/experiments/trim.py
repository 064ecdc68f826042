"""``--remedy trim``: the same task at the prompt length of today, against it trimmed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_TRIM
from latdoc.errors import UsageError
from latdoc.features.verify.arms import base_arm, sized
from latdoc.features.verify.experiments._spec import Argument, Experiment
from latdoc.features.verify.send import Arm
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


@dataclass(frozen=True)
class TrimOptions:
    from_tokens: int | None = None
    """The prompt length today, in tokens (required)."""
    to_tokens: int | None = None
    """The trimmed prompt length, in tokens (required, fewer)."""


def _check(plan: Plan, options: TrimOptions) -> None:
    if options.from_tokens is None or options.to_tokens is None:
        raise UsageError("--remedy trim needs --from N and --to M (prompt tokens)")
    if options.to_tokens >= options.from_tokens:
        raise UsageError("--to must be fewer tokens than --from: trimming shortens")


def _describe(plan: Plan, options: TrimOptions) -> tuple[str, str]:
    return (
        f"a prompt of {options.from_tokens} tokens",
        f"the same task at {options.to_tokens} tokens",
    )


def _arms(plan: Plan, options: TrimOptions, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    assert options.from_tokens is not None and options.to_tokens is not None
    base = base_arm(plan, calibration)
    return (
        replace(
            sized(base, calibration, options.from_tokens),
            label=f"a prompt of {options.from_tokens} tokens",
        ),
        replace(
            sized(base, calibration, options.to_tokens),
            name="B",
            label=f"the same task trimmed to {options.to_tokens} tokens",
        ),
    )


TRIM = Experiment(
    name=VERIFY_TRIM,
    summary="a shorter prompt for the same task",
    options=TrimOptions,
    describe=_describe,
    arms=_arms,
    arguments=(
        Argument(
            "--from",
            "trim: the prompt length today, in tokens",
            dest="from_tokens",
            kind=int,
            metavar="N",
        ),
        Argument(
            "--to",
            "trim: the trimmed prompt length, in tokens",
            dest="to_tokens",
            kind=int,
            metavar="M",
        ),
    ),
    check=_check,
)
