"""``verify --remedy retry``: the same requests with no retries (A) and under a policy (B).

A trial of B is one logical request: attempts until one succeeds or the
:class:`~latdoc.client.RetryPolicy` says stop, with the waits it asks for. Its
end-to-end time runs from the first attempt's start to the last one's end, waits
included, which is what the application sees. Trials of A and B alternate in a
shuffled order so both meet the endpoint's errors alike.

The first request calibrates as every other experiment's does: when it fails as every
request to the endpoint would (:attr:`~latdoc.errors.TraceError.cannot_answer`: nothing
listens there, the key is refused), the trials stop at once, that request is not
retried, and nothing more is sent.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from latdoc.client import FailureClass, RetryPolicy, classify_status
from latdoc.errors import ErrorKind, TraceError
from latdoc.features.verify.send import Arm
from latdoc.probe import ProbeSession
from latdoc.records import RequestTrace, Step, StepNote
from latdoc.workload import Budget


@dataclass(frozen=True)
class RetryOptions:
    """``--remedy retry``'s own options."""

    trials: int = 40
    """Logical requests per arm."""


@dataclass(frozen=True)
class RetryTrial:
    """One logical request of an arm: its attempts, and what the application saw."""

    arm: str
    index: int
    attempts: tuple[RequestTrace, ...]
    waited_s: float
    end_to_end_ms: float

    @property
    def ok(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].ok


@dataclass
class RetryTrialsResult:
    trials: list[RetryTrial] = field(default_factory=list)
    notes: list[StepNote] = field(default_factory=list)
    cannot_answer: TraceError | None = None
    """The first request's failure, when every request would meet it alike: the trials
    stopped there."""


def failure_class(trace: RequestTrace) -> FailureClass:
    """How the client's retry policy classes a failed attempt the probe recorded."""
    error = trace.error
    assert error is not None
    if error.kind is ErrorKind.HTTP and error.status is not None:
        return classify_status(error.status) or FailureClass.OTHER
    if error.kind in (ErrorKind.DNS, ErrorKind.CONNECT, ErrorKind.TLS, ErrorKind.PROXY):
        return FailureClass.CONNECTION
    if error.kind is ErrorKind.TIMEOUT:
        return FailureClass.TIMEOUT
    if error.kind is ErrorKind.STREAM_BROKEN:
        # Broken before anything came back is a connection failure; after, a stream's.
        return FailureClass.STREAM if trace.first_byte_ns is not None else FailureClass.CONNECTION
    return FailureClass.OTHER


async def run_retry_trials(
    arms: tuple[Arm, Arm],
    policy: RetryPolicy,
    budget: Budget,
    trials: int,
    *,
    seed: int | None = None,
    on_trial: Callable[[RetryTrial], None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> RetryTrialsResult:
    """``trials`` trials of each arm: A's first attempt is its last, B retries by ``policy``."""
    rng = random.Random(seed)
    result = RetryTrialsResult()
    index = 0

    async def trial(arm: Arm, session: ProbeSession, retry: bool) -> RetryTrial | None:
        nonlocal index
        started = time.monotonic()
        attempts: list[RequestTrace] = []
        waited = 0.0
        while True:
            if not budget.reserve(arm.prompt_cost, arm.max_tokens):
                return None
            trace = await session.request(arm.prompt(rng), arm.max_tokens)
            attempts.append(trace)
            if index == 0 and len(attempts) == 1 and _cannot_answer(trace):
                result.cannot_answer = trace.error
                break
            if trace.ok or not retry:
                break
            decision = policy.decide(
                len(attempts),
                failure_class(trace),
                elapsed_s=time.monotonic() - started,
                status=trace.status,
                now_wall=time.time(),
                draw=rng.random,
                asked_wait_s=None if trace.error is None else trace.error.retry_after_s,
            )
            if not decision.retry or decision.wait_s is None:
                break
            await asyncio.sleep(decision.wait_s)
            waited += decision.wait_s
        index += 1
        return RetryTrial(
            arm.name, index, tuple(attempts), waited, (time.monotonic() - started) * 1000
        )

    left = budget.seconds_left
    a, b = arms
    try:
        async with (
            a.session(budget) as session_a,
            b.session(budget) as session_b,
            asyncio.timeout(None if math.isinf(left) else left),
        ):
            plan = [(a, session_a, False), (b, session_b, True)]
            for done in range(trials):
                rng.shuffle(plan)
                for arm, session, retry in plan:
                    kept = await trial(arm, session, retry)
                    if kept is None:
                        result.notes.append(
                            StepNote(Step.RUN, f"the budget ran out after {done} trials")
                        )
                        return result
                    result.trials.append(kept)
                    if on_trial is not None:
                        on_trial(kept)
                    if result.cannot_answer is not None:
                        return result
                if on_progress is not None:
                    on_progress(done + 1, trials)
    except TimeoutError:
        result.notes.append(
            StepNote(Step.RUN, "the time budget ran out; the request in flight was abandoned")
        )
    return result


def _cannot_answer(trace: RequestTrace) -> bool:
    return trace.error is not None and trace.error.cannot_answer is not None
