"""The user's checks sent through both arms of an experiment, within its budget.

Each case goes to each arm as the arm sends the user's own request
(:attr:`Arm.adapt <latdoc.features.verify.send.Arm.adapt>`: on B's model, trimmed, at
B's limit …), on a session of the arm's own. The checks are held in the budget before
the latency trials (:func:`hold_checks`), so the trials cannot spend what they need,
yet never so much that the trials lose what a verdict needs (their warm-up and
:data:`~latdoc.features.verify.send.MIN_TRIALS` trials an arm); they are sent after the
trials (:func:`send_checks`), so their answers do not disturb what is timed. A case the
budget cannot afford in both arms is sent in neither. This module sends and reads the
answers; it judges nothing and prints nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from latdoc.features.verify.checks.analysis import Answer
from latdoc.features.verify.checks.cases import CheckCase
from latdoc.features.verify.send import MIN_TRIALS, Arm
from latdoc.model import Price, planned_cost
from latdoc.probe import Prompt
from latdoc.records import RequestTrace, Step, StepNote
from latdoc.workload import Budget, Reservation, TokenCalibration, answer_of, prompt_cost

_WORD = re.compile(r"\w+|[^\w\s]")
MESSAGE_WORDS = 4
"""What a chat message's role and separators are counted as, beside its words."""


@dataclass(frozen=True)
class Held:
    """A case as each arm sends it, and its reservation in the budget, arm by arm."""

    case: CheckCase
    requests: tuple[tuple[Prompt, int], ...]
    """The prompt and output limit each arm sends, in the arms' order."""
    reservations: tuple[Reservation, ...]


def hold_checks(
    cases: Sequence[CheckCase],
    arms: Sequence[Arm],
    budget: Budget,
    calibration: TokenCalibration,
    max_tokens: int,
) -> tuple[list[Held], list[StepNote]]:
    """Reserve each case in every arm, at the arm's price, in the file's order, while the
    budget affords the case in all of them beside the trials' minimum; ``max_tokens`` is
    the output limit of a case that names none. The cases held, and a note if some were
    not."""
    floor = _trials_floor(arms)
    held: list[Held] = []
    for case in cases:
        requests = tuple(_request(arm, case, max_tokens) for arm in arms)
        costs = [
            _Cost(_prompt_cost(prompt, calibration), limit, arm.price)
            for arm, (prompt, limit) in zip(arms, requests, strict=True)
        ]
        if not _spares(budget, floor, costs):
            break
        reservations = [budget.reserve(c.prompt, c.output, price=c.price) for c in costs]
        assert all(r is not None for r in reservations)  # afforded just above
        held.append(Held(case, requests, tuple(r for r in reservations if r is not None)))
    notes = []
    if len(held) < len(cases):
        notes.append(
            StepNote(
                Step.RUN,
                f"the budget affords {len(held)} of the {len(cases)} checks in both arms "
                "beside the trials' minimum: the first "
                f"{len(held)} are checked (--max-requests, --token-budget, --max-cost)",
            )
        )
    return held, notes


async def send_checks(
    held: Sequence[Held],
    arms: Sequence[Arm],
    budget: Budget,
    answers: dict[str, dict[str, Answer]],
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[StepNote]:
    """Send every held case to every arm, each request settled in the budget against its
    reservation, and keep the answers in ``answers`` by arm, then by case id, a case once
    every arm has answered it (so what was answered stays when the sending is stopped);
    a note if the time budget ran out first."""
    for arm in arms:
        answers.setdefault(arm.name, {})
    notes: list[StepNote] = []
    left = budget.seconds_left
    done = 0
    try:
        async with (
            contextlib.AsyncExitStack() as stack,
            asyncio.timeout(None if math.isinf(left) else max(left, 0.0)),
        ):
            sessions = [await stack.enter_async_context(arm.session(budget)) for arm in arms]
            for item in held:
                got = []
                for arm, session, (prompt, limit), reservation in zip(
                    arms, sessions, item.requests, item.reservations, strict=True
                ):
                    text: list[str] = []
                    trace = await session.request(prompt, limit, on_info=answer_of(text))
                    budget.settle(reservation, trace)
                    got.append(_answer(trace, "".join(text), arm))
                for arm, answer in zip(arms, got, strict=True):
                    answers[arm.name][item.case.id] = answer
                done += 1
                if on_progress is not None:
                    on_progress(done, len(held))
    except TimeoutError:
        notes.append(
            StepNote(
                Step.RUN,
                f"the time budget ran out after {done} of {len(held)} checks; "
                "those answered in both arms are compared (--max-seconds)",
            )
        )
    return notes


def _answer(trace: RequestTrace, text: str, arm: Arm) -> Answer:
    if not trace.ok:
        return Answer(None, str(trace.error))
    if not text and trace.chunks:
        dialect = arm.endpoint.dialect.name
        return Answer(None, f"its text could not be read in the {dialect} dialect", unread=True)
    return Answer(text)


def _request(arm: Arm, case: CheckCase, max_tokens: int) -> tuple[Prompt, int]:
    asked = (case.prompt, case.max_tokens or max_tokens)
    return asked if arm.adapt is None else arm.adapt(*asked)


def _prompt_cost(prompt: Prompt, calibration: TokenCalibration) -> int:
    """An upper bound of the prompt's tokens, as the experiment's own prompts are
    counted: its words and punctuation marks, each a word of the calibration."""
    if isinstance(prompt, str):
        return prompt_cost(calibration, len(_WORD.findall(prompt)))
    words = sum(len(_WORD.findall(m["content"])) + MESSAGE_WORDS for m in prompt)
    return prompt_cost(calibration, words)


@dataclass(frozen=True)
class _Cost:
    """One request at its worst case: its prompt's tokens, its output limit, its price."""

    prompt: int
    output: int
    price: Price | None

    @property
    def dollars(self) -> float:
        return 0.0 if self.price is None else planned_cost(self.price, self.prompt, self.output)


def _spares(budget: Budget, floor: Sequence[_Cost], costs: Sequence[_Cost]) -> bool:
    """Whether ``budget`` affords every request of ``costs`` and still the ``floor``'s,
    under each of its caps."""
    if budget.requests_left - len(floor) < len(costs):
        return False
    both = [*floor, *costs]
    tokens = sum(c.prompt + c.output for c in both)
    if budget.token_budget is not None and budget.tokens + tokens > budget.token_budget:
        return False
    dollars = sum(c.dollars for c in both)
    return budget.max_cost is None or budget.spent + dollars <= budget.max_cost


def _trials_floor(arms: Sequence[Arm]) -> list[_Cost]:
    """The requests of the trials a verdict needs: each arm's warm-up and
    :data:`MIN_TRIALS` trials, at the arm's price."""
    return [
        _Cost(arm.prompt_cost, arm.max_tokens, arm.price)
        for arm in arms
        for _ in range((arm.warmup_trials + MIN_TRIALS) * arm.concurrency)
    ]
