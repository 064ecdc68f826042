"""How a step of a diagnosis sends a request: reserved in the :class:`Budget` before it
is sent, labelled with its step, length and concurrency, and kept and handed to
``on_sample`` as soon as it finishes, so an interrupted run keeps every finished trace;
a first attempt the session sends again is kept too, while the budget has room for it.
What each step sends, and when it stops, is :mod:`._steps`'.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from latdoc.errors import TraceError
from latdoc.probe import LoopLagMonitor, ProbeSession, now_ns
from latdoc.records import RequestTrace, Sample, Step, StepNote
from latdoc.workload._budget import Budget
from latdoc.workload._calibration import ASSUMED, TokenCalibration, prompt_cost
from latdoc.workload._diagnosis_plan import DiagnosisPlan
from latdoc.workload._prompts import make_prompt

ProgressHook = Callable[[str, int, int], None]
SampleHook = Callable[[Sample], None]


@dataclass
class StepsResult:
    """What the three measured steps sent: every sample, the notes of what was left out
    and why, and the token calibration."""

    samples: list[Sample] = field(default_factory=list)
    notes: list[StepNote] = field(default_factory=list)
    calibration: TokenCalibration | None = None


class StepSender:
    """What every step sends through: the plan's session, the budget each request is
    reserved in, the token calibration its prompts are sized by, and the samples and
    notes kept as the steps go. :mod:`._steps` sends the steps on it."""

    def __init__(
        self,
        plan: DiagnosisPlan,
        budget: Budget,
        on_sample: SampleHook | None,
        on_progress: ProgressHook | None,
    ) -> None:
        self.plan = plan
        self.budget = budget
        self.rng = random.Random(plan.seed)
        self.result = StepsResult()
        self.on_sample = on_sample
        self.on_progress = on_progress
        self.calibration: TokenCalibration = ASSUMED
        self.lag: LoopLagMonitor | None = None
        self.current_step = Step.CALIBRATION
        self.answered = False
        """Whether any request has succeeded yet."""

    def session(self, *, reuse: bool = True, max_connections: int = 16) -> ProbeSession:
        return self.plan.connection.session(
            self.plan.endpoint,
            reuse=reuse,
            max_connections=max_connections,
            on_resend=self.resend,
        )

    def resend(self, first: RequestTrace) -> bool:
        """Keep a first attempt the session would send again, if the budget has room for it."""
        return self.resend_as(self.current_step, None, 1, cold=False)(first)

    def resend_as(
        self, step: Step, tokens: int | None, concurrency: int, *, cold: bool
    ) -> Callable[[RequestTrace], bool]:
        """A resend hook that keeps the first attempt labelled as the request it belongs to."""

        def hook(first: RequestTrace) -> bool:
            if not self.budget.count_resend():
                return False
            self.keep(Sample(step, first, tokens, concurrency, cold))
            return True

        return hook

    def note(self, step: Step, text: str) -> None:
        self.result.notes.append(StepNote(step, text))

    def keep(self, sample: Sample) -> None:
        """Keep a finished request; raise :class:`CannotAnswer` when it failed as every
        request to this endpoint would, before any has succeeded."""
        t = sample.trace
        end = t.t0_ns + (t.done_ns if t.done_ns is not None else now_ns() - t.t0_ns)
        lag = self.lag.max_between(t.t0_ns, end) if self.lag is not None else None
        sample = replace(sample, index=len(self.result.samples), loop_lag_ms=lag)
        self.result.samples.append(sample)
        if self.on_sample is not None:
            self.on_sample(sample)
        self.answered = self.answered or t.ok
        if not self.answered and t.error is not None and t.error.cannot_answer is not None:
            raise CannotAnswer(t.error)

    def progress(self, step: Step, done: int, total: int) -> None:
        self.current_step = step
        if self.on_progress is not None:
            self.on_progress(step, done, total)

    def prompt(self, tokens: int) -> str:
        return make_prompt(self.calibration.words_for(tokens), self.rng)

    def cost(self, tokens: int) -> int:
        """An upper bound of what the endpoint will count for a prompt asked at ``tokens``."""
        return prompt_cost(self.calibration, self.calibration.words_for(tokens))

    async def send(
        self,
        session: ProbeSession,
        step: Step,
        tokens: int,
        *,
        cold: bool = False,
        resume_tls: bool = False,
    ) -> RequestTrace | None:
        out = self.plan.max_tokens
        cost = self.cost(tokens)
        reservation = self.budget.reserve(cost, out)
        if reservation is None:
            return None
        trace = await session.request(
            self.prompt(tokens),
            out,
            on_resend=self.resend_as(step, tokens, 1, cold=cold),
            resume_tls=resume_tls,
        )
        self.budget.settle(reservation, trace)
        self.keep(Sample(step, trace, tokens, 1, cold))
        return trace


class CannotAnswer(Exception):
    """A request failed as every request to this endpoint would (see
    :attr:`~latdoc.errors.TraceError.cannot_answer`): the steps stop."""

    def __init__(self, error: TraceError) -> None:
        super().__init__(str(error))
        self.error = error
