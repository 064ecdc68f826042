"""An A/B experiment on an endpoint: today's way against a remedy, interleaved.

Each :class:`Arm` says how it connects (its endpoint, HTTP version, pool, reuse)
and what one trial sends (one request, or several at once). The arms' sessions
stay open for the whole experiment, each arm warms up apart from measurement,
and then trials run in blocks of one trial per arm in a shuffled order (A B, B A,
…), so a drift of the endpoint over time hits both arms alike.

Every request is reserved in the :class:`~latdoc.workload.Budget` before it is
sent. The loop stops when the budget is spent or when ``should_stop`` (the
caller's statistics, not computed here) says the answer is precise enough.
This module sends and labels; it computes no verdict and prints nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from latdoc.model import Price
from latdoc.probe import ConnectionOptions, Endpoint, ProbeSession, Prompt
from latdoc.records import RequestTrace, Sample, Step, StepNote
from latdoc.workload import Budget

ARM_NAMES = ("A", "B")
MIN_TRIALS = 10
"""Trials per arm before the experiment may stop early: with fewer, even arms that do
not overlap at all cannot reach significance once a comparison's tests are adjusted
for their number (Mann–Whitney's smallest p for 6 against 6 is 0.0022)."""


@dataclass(frozen=True)
class Arm:
    """One way of sending the same work: how it connects, and what a trial sends."""

    name: str
    label: str
    """What this arm is, in the user's words: "a new connection per request"."""
    endpoint: Endpoint
    connection: ConnectionOptions
    prompt: Callable[[random.Random], Prompt]
    """A fresh prompt for each request of a trial."""
    prompt_cost: int
    """An upper bound of the prompt's tokens, reserved in the budget before sending."""
    max_tokens: int
    reuse: bool = True
    max_connections: int = 16
    concurrency: int = 1
    """Requests sent at once in one trial."""
    warmup_trials: int = 0
    """Trials sent before measuring (to open connections, fill a cache); not kept."""
    target_prompt_tokens: int | None = None
    price: Price | None = None
    """The price of the arm's model, where latdoc knows it: what its requests cost."""
    adapt: Callable[[Prompt, int], tuple[Prompt, int]] | None = None
    """How this arm sends the user's own request (a ``--check`` case: its prompt and
    output limit) with the remedy applied, as it is to the arm's own prompts (trimmed,
    at the arm's own limit); ``None``: as given, on the arm's endpoint and connection."""

    def session(self, budget: Budget | None = None) -> ProbeSession:
        """A session for this arm; a request it would send again is counted in ``budget``
        (and not sent again once the budget has no request left)."""
        return self.connection.session(
            self.endpoint,
            reuse=self.reuse,
            max_connections=self.max_connections,
            on_resend=None if budget is None else lambda first: budget.count_resend(),
        )


@dataclass
class ExperimentResult:
    """The measured samples of each arm, by arm name, and what was left out."""

    samples: dict[str, list[Sample]] = field(default_factory=dict)
    notes: list[StepNote] = field(default_factory=list)
    stopped_because: str = "budget"
    """``precise`` (``should_stop`` said so), ``budget``, ``time`` or ``max_trials``."""


TrialHook = Callable[[str, Sample], None]
StopRule = Callable[[Sequence[Sample], Sequence[Sample]], bool]


async def run_experiment(
    arms: Sequence[Arm],
    budget: Budget,
    *,
    min_trials: int = MIN_TRIALS,
    max_trials: int = 200,
    seed: int | None = None,
    should_stop: StopRule | None = None,
    on_sample: TrialHook | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ExperimentResult:
    """Warm each arm up, then interleave trials in shuffled blocks until done.

    ``should_stop(a_samples, b_samples)`` is asked after each block once every arm
    has ``min_trials`` trials; the experiment also ends at ``max_trials`` trials per
    arm, when the next block does not fit the budget, or at its time limit (the
    request in flight is then abandoned and said so).
    """
    rng = random.Random(seed)
    result = ExperimentResult(samples={arm.name: [] for arm in arms})
    trials = _Trials(budget, rng, result, on_sample)
    left = budget.seconds_left
    try:
        async with (
            contextlib.AsyncExitStack() as stack,
            asyncio.timeout(None if math.isinf(left) else left),
        ):
            for arm in arms:
                trials.sessions[arm.name] = await stack.enter_async_context(arm.session(budget))
            for arm in arms:
                for _ in range(arm.warmup_trials):
                    if not await trials.send(arm, keep=False):
                        result.notes.append(
                            StepNote(Step.RUN, f"the budget ran out warming up arm {arm.name}")
                        )
                        return result
            result.stopped_because = await trials.interleave(
                arms, min_trials, max_trials, should_stop, on_progress
            )
    except TimeoutError:
        result.stopped_because = "time"
        result.notes.append(
            StepNote(Step.RUN, "the time budget ran out; the request in flight was abandoned")
        )
    return result


class _Trials:
    """The experiment's trials: each arm's requests sent within the budget on the arm's
    session, and kept (after the warm-up) as the arm's samples in the order they
    finished."""

    def __init__(
        self,
        budget: Budget,
        rng: random.Random,
        result: ExperimentResult,
        on_sample: TrialHook | None,
    ) -> None:
        self.budget, self.rng, self.result, self.on_sample = budget, rng, result, on_sample
        self.sessions: dict[str, ProbeSession] = {}
        self.index = 0

    async def send(self, arm: Arm, *, keep: bool) -> bool:
        """One trial of ``arm`` (its ``concurrency`` requests at once); ``False`` when the
        budget cannot afford it."""
        budget, rng = self.budget, self.rng
        reservations = budget.reserve_many(
            arm.prompt_cost, arm.max_tokens, arm.concurrency, price=arm.price
        )
        if reservations is None:
            return False
        session = self.sessions[arm.name]
        traces: list[RequestTrace] = await asyncio.gather(
            *(session.request(arm.prompt(rng), arm.max_tokens) for _ in range(arm.concurrency))
        )
        for reservation, trace in zip(reservations, traces, strict=True):
            budget.settle(reservation, trace)
            if not keep:
                continue
            sample = Sample(
                Step.EXPERIMENT,
                trace,
                target_prompt_tokens=arm.target_prompt_tokens,
                concurrency=arm.concurrency,
                cold=bool(trace.new_connection),
                index=self.index,
            )
            self.index += 1
            self.result.samples[arm.name].append(sample)
            if self.on_sample is not None:
                self.on_sample(arm.name, sample)
        return True

    async def interleave(
        self,
        arms: Sequence[Arm],
        min_trials: int,
        max_trials: int,
        should_stop: StopRule | None,
        on_progress: Callable[[int, int], None] | None,
    ) -> str:
        """Every arm once a block, in shuffled order, until the budget, ``max_trials`` or
        ``should_stop`` ends it; why it ended."""
        budget, samples = self.budget, self.result.samples
        trials = 0
        while True:
            block = list(arms)
            self.rng.shuffle(block)
            if not all(
                budget.can_afford(a.prompt_cost, a.max_tokens, count=a.concurrency, price=a.price)
                for a in block
            ) or budget.requests_left < sum(a.concurrency for a in block):
                return "budget"
            for arm in block:
                await self.send(arm, keep=True)
            trials += 1
            if on_progress is not None:
                on_progress(trials, max_trials)
            if trials >= max_trials:
                return "max_trials"
            if (
                trials >= min_trials
                and should_stop is not None
                and len(arms) == 2
                and should_stop(samples[arms[0].name], samples[arms[1].name])
            ):
                return "precise"
