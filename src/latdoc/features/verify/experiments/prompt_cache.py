"""``--remedy prompt-cache``: a long prefix that changes every request, against the same
prefix kept stable with the question after it varied. Only an endpoint that reports
cached prompt tokens can show it."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_PROMPT_CACHE
from latdoc.features.verify.analysis import cached_prompt_tokens
from latdoc.features.verify.arms import QUESTION_TOKENS, Prompts, base_arm, sized
from latdoc.features.verify.experiments._spec import Argument, Experiment
from latdoc.features.verify.send import Arm
from latdoc.records import Sample
from latdoc.workload import TokenCalibration, make_prompt

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan

DEFAULT_PREFIX_TOKENS = 2048


@dataclass(frozen=True)
class PromptCacheOptions:
    prefix_tokens: int = DEFAULT_PREFIX_TOKENS
    """The shared prefix, in tokens."""


def _describe(plan: Plan, options: PromptCacheOptions) -> tuple[str, str]:
    return (
        f"a {options.prefix_tokens}-token prefix varied every request",
        "the same prefix kept stable, the question after it varied",
    )


def _arms(
    plan: Plan, options: PromptCacheOptions, calibration: TokenCalibration
) -> tuple[Arm, Arm]:
    prefix = options.prefix_tokens
    total = prefix + QUESTION_TOKENS
    prefix_words = max(1, round(prefix / calibration.per_word))
    question_words = max(1, calibration.words_for(total) - prefix_words)
    fixed = make_prompt(prefix_words, random.Random(plan.seed))
    varied = sized(base_arm(plan, calibration), calibration, total)
    return (
        replace(varied, label=f"a {prefix}-token prefix that changes every request"),
        replace(
            varied,
            name="B",
            label=f"the same {prefix}-token prefix kept stable, the question after it varied",
            prompt=Prompts(question_words, prefix=fixed),
            warmup_trials=1,
        ),
    )


def _no_cache(options: PromptCacheOptions, a: Sequence[Sample], b: Sequence[Sample]) -> str | None:
    if cached_prompt_tokens(b):
        return None
    return (
        "the endpoint reported no cached prompt tokens for the stable prefix: it "
        "offers no prompt cache to this client, or does not say when it uses one"
    )


PROMPT_CACHE = Experiment(
    name=VERIFY_PROMPT_CACHE,
    summary="a stable prefix the server can cache",
    options=PromptCacheOptions,
    describe=_describe,
    arms=_arms,
    arguments=(
        Argument(
            "--prefix-tokens",
            "prompt-cache: the shared prefix (default %(default)s)",
            kind=int,
            default=DEFAULT_PREFIX_TOKENS,
            metavar="N",
        ),
    ),
    judge=_no_cache,
)
