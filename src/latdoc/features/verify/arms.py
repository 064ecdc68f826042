"""What the arms of ``latdoc verify`` are built from (:class:`Plan`) and what they send:
unique prompts of a length calibrated on the endpoint's own token count, questions with
a short natural answer, and the arm most experiments start both their arms from.

Only the remedy differs between an experiment's arms: the same prompts at the same
lengths, the same output, the same endpoint unless the remedy is another endpoint
or model.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from latdoc.features.verify.send import Arm
from latdoc.model import Price
from latdoc.probe import Prompt
from latdoc.workload import TokenCalibration, make_prompt, prompt_cost

if TYPE_CHECKING:
    from latdoc.analysis.gates import Gate
    from latdoc.probe import ConnectionOptions, Endpoint

T = TypeVar("T")


class Plan(Protocol):
    """What an experiment and its arms read of the plan they run in: the endpoint, how to
    reach it, the budget, and the experiment's own options. A
    :class:`~latdoc.features.verify.VerifyPlan` is one; it holds its experiment, so it
    stands above the registry, which sees it only through this."""

    @property
    def endpoint(self) -> Endpoint: ...
    @property
    def connection(self) -> ConnectionOptions: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def max_requests(self) -> int: ...
    @property
    def token_budget(self) -> int | None: ...
    @property
    def max_seconds(self) -> float: ...
    @property
    def max_cost(self) -> float | None: ...
    @property
    def price(self) -> Price | None: ...
    @property
    def precision(self) -> float: ...
    @property
    def seed(self) -> int | None: ...
    @property
    def gates(self) -> tuple[Gate, ...]: ...
    @property
    def options(self) -> object: ...

    def options_as(self, kind: type[T]) -> T:
        """The options record, which must be a ``kind``: the experiment's own."""
        ...


SHORT_TOKENS = 64
"""The prompt length of remedies that are not about the prompt."""
QUESTION_TOKENS = 32
"""The varied question after a prompt-cache prefix, and a short question's cost."""

QUESTIONS = (
    "Which is larger, the sun or the moon?",
    "What colour is a clear daytime sky?",
    "How many days are in a week?",
    "Is water wet or dry?",
    "What do bees make?",
    "Which season comes after winter?",
)
"""Questions with a short natural answer, for the max-tokens remedy."""


def short_question(rng: random.Random) -> str:
    """A question with a short natural answer, made unique so no cache answers it."""
    return f"Request {rng.getrandbits(40):010x}. In one short sentence: {rng.choice(QUESTIONS)}"


@dataclass(frozen=True)
class Prompts:
    """Unique random-word prompts of ``words`` words, after a fixed ``prefix`` if given."""

    words: int
    prefix: str | None = None

    def __call__(self, rng: random.Random) -> Prompt:
        text = make_prompt(self.words, rng)
        return text if self.prefix is None else f"{self.prefix} {text}"


def sized(arm: Arm, calibration: TokenCalibration, tokens: int) -> Arm:
    """``arm`` sending unique prompts of ``tokens`` tokens as the endpoint counts them."""
    words = calibration.words_for(tokens)
    return replace(
        arm,
        prompt=Prompts(words),
        prompt_cost=prompt_cost(calibration, words),
        target_prompt_tokens=tokens,
    )


def base_arm(plan: Plan, calibration: TokenCalibration) -> Arm:
    """Arm A of short unique prompts on the plan's endpoint, warmed up by one trial: an
    experiment changes what its remedy is about and names the arm."""
    words = calibration.words_for(SHORT_TOKENS)
    return Arm(
        name="A",
        label="",
        endpoint=plan.endpoint,
        connection=plan.connection,
        prompt=Prompts(words),
        prompt_cost=prompt_cost(calibration, words),
        max_tokens=plan.max_tokens,
        target_prompt_tokens=SHORT_TOKENS,
        warmup_trials=1,
    )
