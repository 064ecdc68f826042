"""``--remedy trim``: the same task at the prompt length of today, against it trimmed.

The user's own checks (``--check``) go to A as written and to B trimmed to ``--to``
tokens as an application trims a chat: its system prompt and the latest turns that fit
(:func:`latdoc.client.trim_messages`, never half a message), a text its last words;
where the last turn alone does not fit, its last words that do."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from latdoc.advice.verify import VERIFY_TRIM
from latdoc.client import message_text, trim_messages
from latdoc.errors import ContextTooLong, UsageError
from latdoc.features.verify.arms import base_arm, sized
from latdoc.features.verify.experiments._spec import Argument, Experiment
from latdoc.features.verify.send import Arm
from latdoc.i18n import N_
from latdoc.probe import Prompt
from latdoc.workload import TokenCalibration

MESSAGE_TOKENS = 4
"""A chat message's role and separators, in tokens, beside its words."""

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


@dataclass(frozen=True)
class TrimOptions:
    from_tokens: int | None = None
    """The prompt length today, in tokens (required)."""
    to_tokens: int | None = None
    """The trimmed prompt length, in tokens (required, fewer)."""


def _check(plan: Plan, options: TrimOptions) -> None:
    if options.from_tokens is None or options.to_tokens is None:
        raise UsageError(N_("--remedy trim needs --from N and --to M (prompt tokens)"))
    if options.to_tokens >= options.from_tokens:
        raise UsageError(N_("--to must be fewer tokens than --from: trimming shortens"))


def _describe(plan: Plan, options: TrimOptions) -> tuple[str, str]:
    return (
        f"a prompt of {options.from_tokens} tokens",
        f"the same task at {options.to_tokens} tokens",
    )


def _arms(plan: Plan, options: TrimOptions, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    assert options.from_tokens is not None and options.to_tokens is not None
    base = base_arm(plan, calibration)
    return (
        replace(
            sized(base, calibration, options.from_tokens),
            label=f"a prompt of {options.from_tokens} tokens",
        ),
        replace(
            sized(base, calibration, options.to_tokens),
            name="B",
            label=f"the same task trimmed to {options.to_tokens} tokens",
            adapt=trimmed(calibration, options.to_tokens),
        ),
    )


def trimmed(
    calibration: TokenCalibration, tokens: int
) -> Callable[[Prompt, int], tuple[Prompt, int]]:
    """A user's request (its prompt and output limit) with the prompt trimmed to about
    ``tokens`` tokens as the endpoint counts words."""

    def words_that_fit(text: str, budget: int) -> str:
        words = text.split()
        keep = calibration.words_for(max(budget, 1))
        return text if len(words) <= keep else " ".join(words[-keep:])

    def count(message: Mapping[str, Any]) -> int:
        return math.ceil(calibration.per_word * len(message_text(message).split())) + (
            MESSAGE_TOKENS
        )

    def trim(prompt: Prompt, limit: int) -> tuple[Prompt, int]:
        if isinstance(prompt, str):
            return words_that_fit(prompt, tokens), limit
        try:
            return [dict(m) for m in trim_messages(prompt, tokens, count_tokens=count)], limit
        except ContextTooLong:
            last = prompt[-1]
            content = words_that_fit(last["content"], tokens - MESSAGE_TOKENS)
            return [{"role": last["role"], "content": content}], limit

    return trim


TRIM = Experiment(
    name=VERIFY_TRIM,
    summary="a shorter prompt for the same task",
    options=TrimOptions,
    describe=_describe,
    arms=_arms,
    arguments=(
        Argument(
            "--from",
            "trim: the prompt length today, in tokens",
            dest="from_tokens",
            kind=int,
            metavar="N",
        ),
        Argument(
            "--to",
            "trim: the trimmed prompt length, in tokens",
            dest="to_tokens",
            kind=int,
            metavar="M",
        ),
    ),
    check=_check,
)
