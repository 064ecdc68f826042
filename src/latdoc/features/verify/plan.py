"""What ``latdoc verify`` is asked to test: a :class:`VerifyPlan` holds an experiment of
the registry (:mod:`latdoc.features.verify.experiments`), the settings every experiment
shares, and the experiment's own options record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from latdoc.analysis.gates import Gate
from latdoc.errors import UsageError
from latdoc.features.verify import experiments
from latdoc.features.verify.checks.cases import CheckFile
from latdoc.features.verify.experiments import Experiment
from latdoc.features.verify.send import Arm
from latdoc.i18n import N_, Message
from latdoc.model import Price
from latdoc.probe import ConnectionOptions, Endpoint
from latdoc.workload import TokenCalibration

T = TypeVar("T")

VerifyRemedy = experiments.resolve
"""What a library user names a remedy by: ``VerifyRemedy("keepalive")`` is the
:class:`~latdoc.features.verify.experiments.Experiment` of ``--remedy keepalive`` (an
experiment is itself), as :attr:`VerifyPlan.remedy` holds it."""


@dataclass(frozen=True)
class VerifyPlan:
    """What to test, against which endpoint, within which budget."""

    endpoint: Endpoint
    remedy: Experiment[Any]
    """The experiment; a library user may name it by its ``--remedy`` value
    (``"keepalive"``), looked up here once."""
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
    max_cost: float | None = None
    """Dollars the run may spend, counted at :attr:`price`; ``None`` for no cap."""
    price: Price | None = None
    """The model's price, where latdoc's price library knows it or the user gave it."""
    options: object = None
    """The experiment's own options record; ``None``: its defaults."""
    checks: CheckFile | None = None
    """The user's own checks of the answers (``--check FILE``), sent through both arms
    after the trials; ``None``: none."""

    def __post_init__(self) -> None:
        spec = experiments.resolve(self.remedy)
        object.__setattr__(self, "remedy", spec)
        if self.options is None:
            object.__setattr__(self, "options", spec.options())
        if spec.check is not None:
            spec.check(self, spec.options_of(self))
        if self.checks is not None and spec.runner is not None:
            raise UsageError(
                Message(
                    "--check goes with a remedy of two arms; --remedy {name} runs an experiment "
                    "of its own",
                    name=spec.name,
                )
            )
        if not 0 < self.precision < 1:
            raise UsageError(N_("--precision must be between 0 and 1, e.g. 0.05"))

    def options_as(self, kind: type[T]) -> T:
        """The options record, which must be a ``kind``: the experiment's own."""
        if not isinstance(self.options, kind):
            given = type(self.options).__name__
            raise TypeError(f"--remedy {self.remedy.name} takes {kind.__name__}, not {given}")
        return self.options


def arm_summaries(plan: VerifyPlan) -> tuple[str, str]:
    """What arms A and B will be, said before anything is sent."""
    return plan.remedy.describe(plan, plan.remedy.options_of(plan))


def build_arms(plan: VerifyPlan, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    """Arm A (today) and arm B (the remedy) of ``plan``'s experiment."""
    return plan.remedy.build_arms(plan, calibration)
