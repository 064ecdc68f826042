"""One ``latdoc verify --remedy`` experiment, as data: :class:`Experiment`.

An experiment names its remedy, the options it adds (as data: :class:`Argument`, which
the command line turns into its flags) and the small record it reads their values
into, its two arms (today's way, A, and the remedy, B), the metric and statistic it
is judged by, and what it checks on the endpoint before the arms and on B's answers
after them. One that is not one request against another (a conversation, retries)
names its own :class:`Runner` instead of the shared A/B engine.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from latdoc.analysis.compare import MEDIAN
from latdoc.features.verify.arms import Plan
from latdoc.features.verify.send import Arm
from latdoc.probe import ProbeSession
from latdoc.records import Sample, StepNote
from latdoc.report.shown import Shown
from latdoc.store import Store
from latdoc.workload import ProgressHook, TokenCalibration

Opts = TypeVar("Opts")


@dataclass(frozen=True)
class NoOptions:
    """The options of an experiment that has none of its own."""


@dataclass(frozen=True)
class Argument:
    """One ``latdoc verify`` option of an experiment. Experiments that share an option
    (``--concurrency`` for http2 and pool) name the same :class:`Argument`, and the
    command adds it once."""

    flag: str
    help: str
    """What it does; ``%(default)s`` stands for its default."""
    dest: str | None = None
    kind: type[int] | type[float] | type[str] | type[bool] = str
    """A whole number or a number (both more than 0 on the command line), text, or a
    flag that is off unless given."""
    default: int | float | str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        """The name its value is read by: ``--pool-size`` is ``pool_size``."""
        return self.dest or self.flag.removeprefix("--").replace("-", "_")


def options_from(
    kind: type[Opts], arguments: Sequence[Argument], values: Mapping[str, object]
) -> Opts:
    """A ``kind`` record with each argument's value in ``values`` (by its
    :attr:`~Argument.name`) as the field of that name; an argument without a value
    leaves the field's default."""
    given = {a.name: values[a.name] for a in arguments if a.name in values}
    return kind(**given)


@dataclass(frozen=True)
class Before:
    """What an experiment's check on the endpoint has to hand before its arms run."""

    plan: Plan
    calibration: TokenCalibration
    session: ProbeSession
    """A session already open on the plan's endpoint (the calibration's)."""
    rng: random.Random


class Outcome(Shown, Protocol):
    """What ``latdoc verify`` finds, whichever way its experiment runs: the A/B engine's
    :class:`~latdoc.features.verify.VerifyResult` or what a :class:`Runner` returns."""

    @property
    def notes(self) -> tuple[StepNote, ...]: ...

    @property
    def interrupted(self) -> bool: ...

    @property
    def not_applicable(self) -> bool:
        """The experiment could not apply to the endpoint (the command exits 2)."""
        ...

    @property
    def gates_failed(self) -> bool:
        """A ``--fail-if`` gate failed (the command exits 1)."""
        ...


class Runner(Protocol):
    """How an experiment runs when it is not one request against another."""

    def __call__(
        self, plan: Plan, *, store: Store, on_progress: ProgressHook | None = None
    ) -> Outcome: ...


@dataclass(frozen=True)
class Experiment(Generic[Opts]):
    """One remedy ``latdoc verify`` can measure, and everything that is its own."""

    name: str
    """The ``--remedy`` value."""
    summary: str
    """What B does, in a few words, for ``--help``."""
    options: type[Opts]
    """Its own options record; every field has a default."""
    describe: Callable[[Plan, Opts], tuple[str, str]]
    """What arms A and B will be, said before anything is sent."""
    arms: Callable[[Plan, Opts, TokenCalibration], tuple[Arm, Arm]] | None = None
    """Arm A (today) and arm B (the remedy), from the shared plan and its options."""
    arguments: tuple[Argument, ...] = ()
    """Its own ``latdoc verify`` options."""
    read_options: Callable[[Mapping[str, object]], Opts] | None = None
    """Its options from the values of the options by name (the parsed command line's,
    say); ``None``: each argument's value is the record's field of the same name
    (:func:`options_from`)."""
    check: Callable[[Plan, Opts], None] | None = None
    """Raise :class:`~latdoc.errors.UsageError` for options that cannot make an
    experiment, before anything is sent."""
    headline: str = "ttft"
    """The metric it is judged by (a key of :data:`~latdoc.analysis.compare.METRICS`)."""
    statistic: str = MEDIAN
    """How the headline metric is compared: the median, or the trial mean where requests
    sent at once finish in waves of the pool's size."""
    calibration: bool = True
    """Count prompts on the endpoint's own tokenizer first (its first request, which also
    tells an endpoint that cannot answer); else one token a word is assumed. A runner
    calibrates as it needs: the conversation near a turn's length, retry not at all."""
    precondition: Callable[[Before, Opts], Awaitable[Opts | str]] | None = None
    """Check on the endpoint that it can show the remedy at all: the options the arms are
    built from (with anything measured for them), or why the remedy cannot apply."""
    judge: Callable[[Opts, Sequence[Sample], Sequence[Sample]], str | None] | None = None
    """After the arms, from A's and B's samples: why the remedy could not be shown after
    all (``not_applicable``), or ``None``."""
    runner: Runner | None = None
    """Runs the experiment instead of the A/B engine, and owns what it returns."""
    schedule: str | None = None
    """How the plan says its requests are sent, for a runner that does not send A/B
    trials until the headline is precise."""
    builtin_http2: bool = False
    """The built-in endpoint must offer HTTP/2 for this experiment."""
    caveat: str | None = None
    """What the measurement cannot say, shown under the verdict."""
    secrets: Callable[[Opts], tuple[str, ...]] | None = None
    """The credentials its options hold (another endpoint's key), masked wherever a run
    is written as the endpoint's own key is."""

    def __post_init__(self) -> None:
        if self.arms is None and self.runner is None:
            raise ValueError(f"experiment {self.name!r} needs arms or a runner of its own")
        fields = inspect.signature(self.options).parameters
        unread = [a.flag for a in self.arguments if a.name not in fields]
        if unread and self.read_options is None:
            raise ValueError(
                f"experiment {self.name!r} has no field for {', '.join(unread)}: "
                "it needs read_options"
            )

    def options_of(self, plan: Plan) -> Opts:
        """The plan's options record, as this experiment's own type."""
        return plan.options_as(self.options)

    def secrets_of(self, plan: Plan) -> tuple[str, ...]:
        """The credentials the plan's options hold, beside the endpoint's own key."""
        return () if self.secrets is None else self.secrets(self.options_of(plan))

    def read(self, values: Mapping[str, object]) -> Opts:
        """Its options record from the values of the options by name, e.g. the parsed
        command line's ``vars(args)``; values of other experiments' options are ignored."""
        if self.read_options is not None:
            return self.read_options(values)
        return options_from(self.options, self.arguments, values)

    def build_arms(
        self, plan: Plan, calibration: TokenCalibration, options: Opts | None = None
    ) -> tuple[Arm, Arm]:
        """Arms A and B from the plan and ``options`` (by default the plan's own)."""
        if self.arms is None:
            raise ValueError(f"--remedy {self.name} runs its own experiment, not two arms")
        chosen = self.options_of(plan) if options is None else options
        return self.arms(plan, chosen, calibration)
