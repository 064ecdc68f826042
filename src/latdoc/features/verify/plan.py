"""What ``latdoc verify`` is asked to test: a :class:`VerifyPlan` names a remedy of the
registry (:mod:`latdoc.features.verify.experiments`), the settings every experiment
shares, and the remedy's own options record.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TypeVar, cast

from latdoc.analysis.gates import Gate
from latdoc.errors import UsageError
from latdoc.features.verify import experiments
from latdoc.features.verify.send import Arm
from latdoc.probe import ConnectionOptions, Endpoint
from latdoc.workload import TokenCalibration

T = TypeVar("T")

VerifyRemedy = cast(
    "type[enum.StrEnum]",
    enum.StrEnum(
        "VerifyRemedy",
        [(name.upper().replace("-", "_"), name) for name in experiments.names()],
        module=__name__,
    ),
)
VerifyRemedy.__doc__ = """The remedies ``latdoc verify --remedy`` can measure, one member per
experiment of the registry (``VerifyRemedy.MAX_TOKENS`` is ``"max-tokens"``)."""


@dataclass(frozen=True)
class VerifyPlan:
    """What to test, against which endpoint, within which budget."""

    endpoint: Endpoint
    remedy: str
    """The experiment's name, its ``--remedy`` value."""
    connection: ConnectionOptions = field(default_factory=ConnectionOptions)
    max_tokens: int = 32
    """Output length of every request (an experiment about the limit sets its own)."""
    max_requests: int = 200
    token_budget: int | None = None
    max_seconds: float = 180.0
    precision: float = 0.05
    """Stop once the 95% interval of the headline ratio is within ± this fraction."""
    seed: int | None = None
    gates: tuple[Gate, ...] = ()
    """Regression gates B must pass against A, today's way (``--fail-if``)."""
    options: object = None
    """The experiment's own options record; ``None``: its defaults."""

    def __post_init__(self) -> None:
        spec = experiments.experiment(self.remedy)
        if self.options is None:
            object.__setattr__(self, "options", spec.options())
        if spec.check is not None:
            spec.check(self, spec.options_of(self))
        if not 0 < self.precision < 1:
            raise UsageError("--precision must be between 0 and 1, e.g. 0.05")

    def options_as(self, kind: type[T]) -> T:
        """The options record, which must be a ``kind``: the experiment's own."""
        if not isinstance(self.options, kind):
            raise TypeError(
                f"--remedy {self.remedy} takes {kind.__name__}, not {type(self.options).__name__}"
            )
        return self.options


def arm_summaries(plan: VerifyPlan) -> tuple[str, str]:
    """What arms A and B will be, said before anything is sent."""
    spec = experiments.experiment(plan.remedy)
    return spec.describe(plan, spec.options_of(plan))


def build_arms(plan: VerifyPlan, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    """Arm A (today) and arm B (the remedy) of ``plan``'s experiment."""
    return experiments.experiment(plan.remedy).build_arms(plan, calibration)
