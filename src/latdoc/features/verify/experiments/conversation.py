"""``--remedy conversation``: a multi-turn chat that keeps everything, against the same
chat under strategies that bound it; run by :mod:`latdoc.features.verify.conversation`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_CONVERSATION
from latdoc.analysis.compare import TRIAL_MEAN
from latdoc.errors import UsageError
from latdoc.features.verify.conversation import verify_conversation
from latdoc.features.verify.conversation.send import ConversationOptions, parse_strategies
from latdoc.features.verify.experiments._spec import Argument, Experiment
from latdoc.i18n import N_

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


def _check(plan: Plan, options: ConversationOptions) -> None:
    parse_strategies(options.strategies)
    if options.turns < 2:
        raise UsageError(N_("--turns must be at least 2: a conversation needs history"))


def _describe(plan: Plan, options: ConversationOptions) -> tuple[str, str]:
    return (
        f"a {options.turns}-turn chat of {options.tokens_per_turn} tokens a turn that keeps "
        "everything",
        f"the same chat under each of {options.strategies}",
    )


CONVERSATION = Experiment(
    name=VERIFY_CONVERSATION,
    summary="bound the chat history: window, summary, reset",
    options=ConversationOptions,
    describe=_describe,
    arguments=(
        Argument(
            "--turns",
            "conversation: turns in the chat (default %(default)s)",
            kind=int,
            default=ConversationOptions.turns,
            metavar="T",
        ),
        Argument(
            "--tokens-per-turn",
            "conversation: tokens the user adds each turn (default %(default)s)",
            kind=int,
            default=ConversationOptions.tokens_per_turn,
            metavar="K",
        ),
        Argument(
            "--strategies",
            "conversation: window:N, summary:N, reset:N, comma-separated (default %(default)s)",
            default=ConversationOptions.strategies,
            metavar="LIST",
        ),
    ),
    check=_check,
    statistic=TRIAL_MEAN,
    runner=verify_conversation,
    schedule="Every strategy answers the same user turns, turn by turn in a shuffled order",
)
