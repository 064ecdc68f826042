"""A multi-turn chat kept in full, and the same chat under strategies that bound it.

Every strategy holds the same conversation: each turn the user adds a message of
the same length, the model answers, and the answer joins the history. What a
strategy sends each turn differs:

- ``keep``: everything so far (today's way; the history grows every turn);
- ``window:N``: the last N turns only (a sliding window; older turns dropped);
- ``summary:N``: past N turns, the oldest are replaced by a summary the model
  writes (that call's latency and tokens count against the strategy);
- ``reset:N``: every N turns a fresh conversation starts, carrying a summary of
  the one before (also written by the model, also counted).

The strategies run side by side, turn by turn in a shuffled order, so a drift of
the endpoint hits them alike. This module sends and labels; it computes no
verdict and prints nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from latdoc import i18n
from latdoc.errors import UsageError
from latdoc.probe import ConnectionOptions, Endpoint, ProbeSession
from latdoc.records import RequestTrace, Step, StepNote
from latdoc.workload import Budget, TokenCalibration, answer_of, make_prompt, prompt_cost

KEEP = "keep"
KINDS = ("window", "summary", "reset")
SUMMARY_MAX_TOKENS = 128
SUMMARY_INSTRUCTION = (
    "Summarize the conversation so far in at most 80 words, keeping every fact the user gave:"
)
Message = dict[str, str]


@dataclass(frozen=True)
class Strategy:
    """How much of the history a turn sends: ``keep``, ``window:N``, ``summary:N``, ``reset:N``."""

    kind: str
    turns: int = 0

    @property
    def name(self) -> str:
        return KEEP if self.kind == KEEP else f"{self.kind}:{self.turns}"

    def describe(self) -> str:
        if self.kind == KEEP:
            return "the whole history every turn"
        if self.kind == "window":
            return f"the last {self.turns} turns (a sliding window)"
        if self.kind == "summary":
            return f"past {self.turns} turns, the oldest replaced by the model's summary"
        return f"a fresh conversation every {self.turns} turns, carrying a summary"


def parse_strategies(text: str) -> tuple[Strategy, ...]:
    """``window:6,summary:10,reset:20`` as strategies; a clear error for anything else."""
    out: list[Strategy] = []
    for part in (p.strip() for p in text.split(",")):
        kind, _, number = part.partition(":")
        if kind not in KINDS or not number.isdigit() or int(number) < 1:
            raise UsageError(
                i18n.Message(
                    "--strategies: {part!r} is not one of window:N, summary:N, reset:N (N turns, "
                    "at least 1)",
                    part=part,
                )
            )
        strategy = Strategy(kind, int(number))
        if strategy in out:
            raise UsageError(i18n.Message("--strategies: {part!r} is given twice", part=part))
        out.append(strategy)
    if not out:
        raise UsageError(i18n.N_("--strategies: name at least one, e.g. window:6"))
    return tuple(out)


@dataclass(frozen=True)
class ConversationTurn:
    """One request a strategy sent: the turn's answer, or a summary it needed."""

    strategy: str
    turn: int
    """From 1."""
    trace: RequestTrace
    summary: bool = False
    """A summary call (its time and tokens are the strategy's cost), not an answer."""
    history_turns: int = 0
    """Turns of history the request carried, whole or as a summary."""


@dataclass
class ConversationResult:
    turns: list[ConversationTurn] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    """What each strategy left out, in words."""
    notes: list[StepNote] = field(default_factory=list)


@dataclass
class _Chat:
    """One strategy's conversation: what it will send next, and what it dropped."""

    strategy: Strategy
    history: list[Message] = field(default_factory=list)
    """Turns kept in full, as user/assistant pairs."""
    summary: str | None = None
    turns_summarised: int = 0
    turns_dropped: int = 0
    resets: int = 0
    since_reset: int = 0

    def messages(self, user: str) -> list[Message]:
        head: list[Message] = []
        if self.summary:
            head = [{"role": "system", "content": f"Earlier in this conversation: {self.summary}"}]
        return [*head, *self.history, {"role": "user", "content": user}]

    def kept_turns(self) -> int:
        return len(self.history) // 2 + self.turns_summarised

    def dropped_text(self) -> str:
        s = self.strategy
        if s.kind == KEEP:
            return "nothing"
        if s.kind == "window":
            dropped = self.turns_dropped
            return f"{dropped} turn{'s' if dropped != 1 else ''} left out of the window"
        if s.kind == "summary":
            summarised = self.turns_summarised
            return f"{summarised} turn{'s' if summarised != 1 else ''} replaced by a summary"
        starts = "fresh start" if self.resets == 1 else "fresh starts"
        return f"{self.resets} {starts}, each carrying a summary"


@dataclass(frozen=True)
class ConversationOptions:
    """``--remedy conversation``'s own options: the chat, and the strategies that bound it."""

    turns: int = 20
    tokens_per_turn: int = 200
    """Tokens the user adds each turn."""
    strategies: str = "window:6,summary:10,reset:20"
    """``window:N``, ``summary:N``, ``reset:N``, comma-separated."""


@dataclass(frozen=True)
class ConversationPlan:
    endpoint: Endpoint
    connection: ConnectionOptions
    strategies: tuple[Strategy, ...]
    turns: int = 20
    tokens_per_turn: int = 200
    max_tokens: int = 32
    seed: int | None = None


def planned_requests(plan: ConversationPlan) -> int:
    """Answers plus the most summary calls the strategies can need."""
    total = plan.turns * (1 + len(plan.strategies))
    for s in plan.strategies:
        if s.kind in ("summary", "reset"):
            total += plan.turns // max(1, s.turns // 2 if s.kind == "summary" else s.turns)
    return total


async def run_conversations(
    plan: ConversationPlan,
    calibration: TokenCalibration,
    budget: Budget,
    *,
    on_turn: Callable[[ConversationTurn], None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ConversationResult:
    """Hold the conversation under ``keep`` and every strategy, turn by turn."""
    rng = random.Random(plan.seed)
    chats = [_Chat(Strategy(KEEP)), *(_Chat(s) for s in plan.strategies)]
    result = ConversationResult()
    words = calibration.words_for(plan.tokens_per_turn)
    turns = _Turns(plan, calibration, budget, result, prompt_cost(calibration, words), on_turn)
    async with contextlib.AsyncExitStack() as stack:
        sessions = [
            await stack.enter_async_context(plan.connection.session(plan.endpoint)) for _ in chats
        ]
        order = list(range(len(chats)))
        left = budget.seconds_left
        try:
            async with asyncio.timeout(None if math.isinf(left) else left):
                for turn in range(1, plan.turns + 1):
                    user = make_prompt(words, rng)
                    rng.shuffle(order)
                    for i in order:
                        if not await turns.take_turn(sessions[i], chats[i], turn, user):
                            result.notes.append(
                                StepNote(Step.RUN, f"the budget ran out at turn {turn}")
                            )
                            return _done(result, chats)
                    if on_progress is not None:
                        on_progress(turn, plan.turns)
        except TimeoutError:
            result.notes.append(
                StepNote(Step.RUN, "the time budget ran out; the request in flight was abandoned")
            )
    return _done(result, chats)


class _Turns:
    """A turn of one strategy's chat: its history trimmed, reset or summarised as the
    strategy says, then the user's message sent within the budget and every request
    kept as a :class:`ConversationTurn`."""

    def __init__(
        self,
        plan: ConversationPlan,
        calibration: TokenCalibration,
        budget: Budget,
        result: ConversationResult,
        user_cost: int,
        on_turn: Callable[[ConversationTurn], None] | None,
    ) -> None:
        self.plan, self.calibration, self.budget = plan, calibration, budget
        self.result, self.user_cost, self.on_turn = result, user_cost, on_turn

    async def send(
        self,
        session: ProbeSession,
        chat: _Chat,
        turn: int,
        messages: Any,
        *,
        max_tokens: int,
        summary: bool,
    ) -> tuple[RequestTrace, str] | None:
        calibration, budget, user_cost = self.calibration, self.budget, self.user_cost
        cost = sum(prompt_cost(calibration, len(m["content"].split())) for m in messages)
        reservation = budget.reserve(max(cost, user_cost), max_tokens)
        if reservation is None:
            return None
        text: list[str] = []
        trace = await session.request(messages, max_tokens, on_info=answer_of(text))
        budget.settle(reservation, trace)
        record = ConversationTurn(chat.strategy.name, turn, trace, summary, chat.kept_turns())
        self.result.turns.append(record)
        if self.on_turn is not None:
            self.on_turn(record)
        return trace, "".join(text)

    async def summarise(self, session: ProbeSession, chat: _Chat, turn: int, pairs: int) -> bool:
        old = chat.history[: 2 * pairs]
        prior = [] if chat.summary is None else [f"Earlier: {chat.summary}"]
        transcript = "\n".join(prior + [f"{m['role']}: {m['content']}" for m in old])
        messages = [{"role": "user", "content": f"{SUMMARY_INSTRUCTION}\n\n{transcript}"}]
        sent = await self.send(
            session, chat, turn, messages, max_tokens=SUMMARY_MAX_TOKENS, summary=True
        )
        if sent is None:
            return False
        trace, text = sent
        chat.summary = text.strip() or chat.summary
        chat.history = chat.history[2 * pairs :]
        chat.turns_summarised += pairs
        return trace.ok

    async def take_turn(self, session: ProbeSession, chat: _Chat, turn: int, user: str) -> bool:
        s = chat.strategy
        if s.kind == "reset" and chat.since_reset >= s.turns and chat.history:
            if not await self.summarise(session, chat, turn, len(chat.history) // 2):
                return False
            chat.resets += 1
            chat.since_reset = 0
        pairs = len(chat.history) // 2
        if (
            s.kind == "summary"
            and pairs >= s.turns
            and not await self.summarise(session, chat, turn, pairs - s.turns // 2)
        ):
            return False
        if s.kind == "window" and pairs >= s.turns:
            drop = pairs - s.turns + 1
            chat.history = chat.history[2 * drop :]
            chat.turns_dropped += drop
        sent = await self.send(
            session, chat, turn, chat.messages(user), max_tokens=self.plan.max_tokens, summary=False
        )
        if sent is None:
            return False
        trace, answer = sent
        chat.history += [
            {"role": "user", "content": user},
            {"role": "assistant", "content": answer if trace.ok else ""},
        ]
        chat.since_reset += 1
        return True


def _done(result: ConversationResult, chats: Sequence[_Chat]) -> ConversationResult:
    result.dropped = {chat.strategy.name: chat.dropped_text() for chat in chats}
    return result
