"""``--remedy keepalive``: a new connection per request, against one kept alive."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_KEEPALIVE
from latdoc.features.verify.arms import base_arm
from latdoc.features.verify.experiments._spec import Experiment, NoOptions
from latdoc.features.verify.send import Arm
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


def _describe(plan: Plan, options: NoOptions) -> tuple[str, str]:
    return "a new connection per request", "one connection, kept alive and reused"


def _arms(plan: Plan, options: NoOptions, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    base = base_arm(plan, calibration)
    return (
        replace(
            base, label="a new connection (DNS, TCP, TLS) per request", reuse=False, warmup_trials=0
        ),
        replace(base, name="B", label="one connection, kept alive and reused", warmup_trials=1),
    )


KEEPALIVE = Experiment(
    name=VERIFY_KEEPALIVE,
    summary="reuse one connection",
    options=NoOptions,
    describe=_describe,
    arms=_arms,
)
