"""Keep a conversation's prompt bounded: trim, summarize, reset.

The same strategies ``latdoc verify --remedy conversation`` measures:

- :func:`trim_messages`: the system prompt and the last turns that fit a token
  budget (a sliding window), never half a message;
- :func:`summarize_history` (and :func:`asummarize_history`): the oldest turns
  replaced by a summary the model writes (:func:`summary_prompt` is the request);
- :class:`ResetPolicy`: every N turns a fresh conversation that carries a summary.

Token counting is pluggable: any ``count_tokens(message) -> int`` (a tokenizer
the user has), or :class:`TokenEstimate`, characters per token calibrated on the
``usage.prompt_tokens`` the endpoint reports. Messages are OpenAI-style mappings
(``role``, ``content``); they are passed through unchanged, never copied in part.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from latdoc import i18n
from latdoc.errors import ContextTooLong, PolicyError

__all__ = [
    "SUMMARY_INSTRUCTION",
    "Message",
    "ResetPolicy",
    "TokenEstimate",
    "asummarize_history",
    "message_text",
    "summarize_history",
    "summary_prompt",
    "trim_messages",
]

Message = Mapping[str, Any]
TokenCounter = Callable[[Message], int]

_SYSTEM_AND_LAST = i18n.N_("the system prompt and the last turn")
"""What must be kept when a history is trimmed, as :class:`ContextTooLong` names it."""

SUMMARY_INSTRUCTION = (
    "Summarize the conversation so far in at most 80 words, keeping every fact the user gave:"
)
_SYSTEM_ROLES = ("system", "developer")
_SUMMARY_PREFIX = "Earlier in this conversation: "


def message_text(message: Message) -> str:
    """The text of a message: its content string, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


@dataclass(frozen=True, slots=True)
class TokenEstimate:
    """Tokens of a message estimated from its length: ``ceil(chars / chars_per_token)``
    plus ``tokens_per_message`` for the role and separators.

    The defaults fit English under OpenAI's tokenizers roughly; :meth:`calibrated`
    fits ``chars_per_token`` to what an endpoint reports in ``usage.prompt_tokens``.
    """

    chars_per_token: float = 4.0
    tokens_per_message: int = 4

    def __post_init__(self) -> None:
        if not (math.isfinite(self.chars_per_token) and self.chars_per_token > 0):
            raise PolicyError(
                i18n.Message(
                    "chars_per_token must be > 0, got {chars_per_token!r}",
                    chars_per_token=self.chars_per_token,
                )
            )
        if self.tokens_per_message < 0:
            raise PolicyError(
                i18n.Message(
                    "tokens_per_message must be >= 0, got {tokens_per_message}",
                    tokens_per_message=self.tokens_per_message,
                )
            )

    def __call__(self, message: Message) -> int:
        chars = len(message_text(message))
        return math.ceil(chars / self.chars_per_token) + self.tokens_per_message

    def calibrated(self, observations: Iterable[tuple[Sequence[Message], int]]) -> TokenEstimate:
        """The estimate fitted to ``(messages, usage.prompt_tokens)`` pairs the endpoint
        answered: characters over the tokens left once ``tokens_per_message`` is paid."""
        chars = tokens = 0
        for messages, prompt_tokens in observations:
            chars += sum(len(message_text(m)) for m in messages)
            tokens += prompt_tokens - self.tokens_per_message * len(messages)
        if chars <= 0 or tokens <= 0:
            raise PolicyError(
                i18n.N_("calibration needs messages with text and their prompt_tokens")
            )
        return TokenEstimate(chars / tokens, self.tokens_per_message)


def _count(messages: Iterable[Message], count_tokens: TokenCounter) -> int:
    return sum(count_tokens(m) for m in messages)


def _split_system(messages: Sequence[Message], keep_system: bool) -> tuple[int, list[Message]]:
    """How many leading messages are the system prompt (kept whole), and those messages."""
    lead = 0
    if keep_system:
        while lead < len(messages) and messages[lead].get("role") in _SYSTEM_ROLES:
            lead += 1
    return lead, list(messages[:lead])


def _turn_starts(messages: Sequence[Message], start: int) -> list[int]:
    """Where each turn begins: at a user message (or the history's first message)."""
    starts = [i for i in range(start, len(messages)) if messages[i].get("role") == "user"]
    if start < len(messages) and (not starts or starts[0] != start):
        starts.insert(0, start)
    return starts


def trim_messages(
    messages: Sequence[Message],
    budget_tokens: int,
    *,
    count_tokens: TokenCounter | None = None,
    keep_system: bool = True,
) -> list[Message]:
    """The system prompt and the most recent turns whose tokens fit ``budget_tokens``.

    The leading ``system``/``developer`` messages are kept when ``keep_system``;
    the rest is cut at a turn's start (a user message), so the history sent never
    begins with an answer or a tool result whose call was cut, and no message is
    ever split. The last turn is always kept: when it (with the system prompt)
    does not fit, :class:`~latdoc.errors.ContextTooLong` says by how much.
    ``count_tokens`` defaults to :class:`TokenEstimate`.
    """
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 1:
        raise PolicyError(
            i18n.Message(
                "budget_tokens must be an integer >= 1, got {budget_tokens!r}",
                budget_tokens=budget_tokens,
            )
        )
    count = count_tokens or TokenEstimate()
    lead, system = _split_system(messages, keep_system)
    used = _count(system, count)
    starts = _turn_starts(messages, lead)
    if not starts:
        if used > budget_tokens:
            raise ContextTooLong(used, budget_tokens, _SYSTEM_AND_LAST)
        return system
    cut = len(messages)
    for start in reversed(starts):
        cost = _count(messages[start:cut], count)
        if used + cost > budget_tokens:
            if cut == len(messages):
                need = used + cost
                raise ContextTooLong(need, budget_tokens, _SYSTEM_AND_LAST)
            break
        used += cost
        cut = start
    return [*system, *messages[cut:]]


def summary_prompt(messages: Sequence[Message]) -> list[dict[str, str]]:
    """The request that asks the model for a summary of ``messages``."""
    transcript = "\n".join(f"{m.get('role', 'user')}: {message_text(m)}" for m in messages)
    return [{"role": "user", "content": f"{SUMMARY_INSTRUCTION}\n\n{transcript}"}]


def _summary_message(summary: str) -> dict[str, str]:
    return {"role": "system", "content": _SUMMARY_PREFIX + summary.strip()}


def _split_old(
    messages: Sequence[Message], keep_turns: int, keep_system: bool
) -> tuple[list[Message], list[Message], list[Message]]:
    """System prompt, the turns to summarize, and the last ``keep_turns`` turns."""
    if isinstance(keep_turns, bool) or not isinstance(keep_turns, int) or keep_turns < 1:
        raise PolicyError(
            i18n.Message(
                "keep_turns must be an integer >= 1, got {keep_turns!r}", keep_turns=keep_turns
            )
        )
    lead, system = _split_system(messages, keep_system)
    starts = _turn_starts(messages, lead)
    if len(starts) <= keep_turns:
        return system, [], list(messages[lead:])
    cut = starts[-keep_turns]
    return system, list(messages[lead:cut]), list(messages[cut:])


def summarize_history(
    messages: Sequence[Message],
    summarize: Callable[[Sequence[Message]], str],
    *,
    keep_turns: int = 4,
    keep_system: bool = True,
) -> list[Message]:
    """The last ``keep_turns`` turns, with every older turn replaced by a summary.

    ``summarize(old_messages)`` asks the model and returns its text, e.g.::

        lambda old: client.chat.completions.create(
            model=MODEL, messages=summary_prompt(old)).choices[0].message.content

    The summary goes after the system prompt as a system message. With no more
    than ``keep_turns`` turns the messages come back as they are, and the model
    is not called.
    """
    system, old, recent = _split_old(messages, keep_turns, keep_system)
    if not old:
        return [*system, *recent]
    return [*system, _summary_message(summarize(old)), *recent]


async def asummarize_history(
    messages: Sequence[Message],
    summarize: Callable[[Sequence[Message]], Awaitable[str]],
    *,
    keep_turns: int = 4,
    keep_system: bool = True,
) -> list[Message]:
    """:func:`summarize_history` with an async ``summarize``."""
    system, old, recent = _split_old(messages, keep_turns, keep_system)
    if not old:
        return [*system, *recent]
    return [*system, _summary_message(await summarize(old)), *recent]


@dataclass(frozen=True, slots=True)
class ResetPolicy:
    """Start a fresh conversation every ``every_turns`` turns, carrying a summary.

    :meth:`due` says whether the history has reached it; :meth:`reset` builds the
    fresh start: the system prompt, the summary of everything before, and the
    last message when it is the user's turn still waiting for its answer.
    """

    every_turns: int = 20

    def __post_init__(self) -> None:
        turns = self.every_turns
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
            raise PolicyError(
                i18n.Message("every_turns must be an integer >= 1, got {turns!r}", turns=turns)
            )

    def due(self, messages: Sequence[Message], *, keep_system: bool = True) -> bool:
        lead, _ = _split_system(messages, keep_system)
        return len(_turn_starts(messages, lead)) > self.every_turns

    def reset(
        self, messages: Sequence[Message], summary: str, *, keep_system: bool = True
    ) -> list[Message]:
        _, system = _split_system(messages, keep_system)
        pending = list(messages[-1:]) if messages and messages[-1].get("role") == "user" else []
        return [*system, _summary_message(summary), *pending]
