"""``--remedy max-tokens``: a generous ``max_tokens`` against one just above what the
answer needs, measured first. Only an answer that ends by itself can show it, and only
if the tight limit does not cut the answers. The user's own checks (``--check``) are
sent at each arm's own limit, whatever limit a case names: the limit is the remedy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_MAX_TOKENS
from latdoc.features.verify.arms import QUESTION_TOKENS, base_arm, short_question
from latdoc.features.verify.experiments._spec import Argument, Before, Experiment
from latdoc.features.verify.send import Arm
from latdoc.probe import Prompt
from latdoc.records import Sample
from latdoc.workload import TokenCalibration, prompt_cost

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan

GENEROUS_MAX_TOKENS = 4096
CUT_ANSWERS_ALLOWED = 0.1
"""Above this share of B's answers cut at the limit, max-tokens changed the answer."""


@dataclass(frozen=True)
class MaxTokensOptions:
    generous_max_tokens: int = GENEROUS_MAX_TOKENS
    """Arm A's limit."""
    answer_tokens: int | None = None
    """The answer's natural length, measured on the endpoint before the arms."""


def tight_max_tokens(answer_tokens: int) -> int:
    """A limit just above an answer of ``answer_tokens``: a quarter more, at least 8 more."""
    return answer_tokens + max(8, answer_tokens // 4)


def _describe(plan: Plan, options: MaxTokensOptions) -> tuple[str, str]:
    return (
        f"max_tokens={options.generous_max_tokens}",
        "max_tokens just above what the answer needs (measured first)",
    )


def _arms(plan: Plan, options: MaxTokensOptions, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    answer = options.answer_tokens
    if answer is None:
        raise ValueError("the max-tokens remedy needs the answer's natural length")
    tight, generous = tight_max_tokens(answer), options.generous_max_tokens
    question = replace(
        base_arm(plan, calibration),
        prompt=short_question,
        prompt_cost=prompt_cost(calibration, calibration.words_for(QUESTION_TOKENS)),
        target_prompt_tokens=None,
    )
    return (
        replace(
            question,
            label=f"max_tokens={generous} for a ~{answer}-token answer",
            max_tokens=generous,
            adapt=at_limit(generous),
        ),
        replace(
            question,
            name="B",
            label=f"max_tokens={tight}, just above the answer's {answer} tokens",
            max_tokens=tight,
            adapt=at_limit(tight),
        ),
    )


def at_limit(max_tokens: int) -> Callable[[Prompt, int], tuple[Prompt, int]]:
    """A user's request sent at ``max_tokens``, whatever limit it names."""
    return lambda prompt, limit: (prompt, max_tokens)


async def _answer_length(before: Before, options: MaxTokensOptions) -> MaxTokensOptions | str:
    """The natural length of an answer, or why there is none to measure."""
    generous = options.generous_max_tokens
    trace = (await before.session.request(short_question(before.rng), generous)).raise_for_error()
    if trace.finish_reason != "stop" or not trace.output_tokens:
        return (
            f"the answer did not end by itself within max_tokens={generous} "
            f"(finish reason {trace.finish_reason or 'none'}): with an answer as long as the "
            "limit, only the limit could differ between the arms, so nothing can be verified"
        )
    return replace(options, answer_tokens=trace.output_tokens)


def _cut_answers(options: MaxTokensOptions, a: Sequence[Sample], b: Sequence[Sample]) -> str | None:
    cut = [s for s in b if s.trace.ok and s.trace.finish_reason != "stop"]
    if b and len(cut) > CUT_ANSWERS_ALLOWED * len(b):
        return (
            f"{len(cut)} of {len(b)} answers in B were cut at the limit: the tight "
            "max_tokens changed the answers, not only the limit"
        )
    return None


MAX_TOKENS = Experiment(
    name=VERIFY_MAX_TOKENS,
    summary="a max_tokens just above the answer",
    options=MaxTokensOptions,
    describe=_describe,
    arms=_arms,
    arguments=(
        Argument(
            "--generous-max-tokens",
            "max-tokens: arm A's limit (default %(default)s)",
            kind=int,
            default=GENEROUS_MAX_TOKENS,
            metavar="N",
        ),
    ),
    precondition=_answer_length,
    judge=_cut_answers,
)
