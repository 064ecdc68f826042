"""``latdoc verify --remedy conversation``: the same chat kept whole and under strategies.

One run is kept per strategy (``keep`` first), each turn a sample (its index is
the turn), each summary a sample of its own step.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from latdoc.features.verify.conversation.analysis import KEEP, StrategyOutcome, TurnRecord, outcomes
from latdoc.features.verify.conversation.render import (
    conversation_to_dict,
    render_conversation,
    render_conversation_html,
)
from latdoc.features.verify.conversation.send import (
    ConversationOptions,
    ConversationPlan,
    ConversationTurn,
    parse_strategies,
    run_conversations,
)
from latdoc.features.verify.runs import ArmRun, open_verify_runs
from latdoc.records import Sample, Step, StepNote
from latdoc.store import Store
from latdoc.workload import (
    ASSUMED,
    Budget,
    CalibrationFailed,
    ProgressHook,
    budget_for,
    calibrate,
    calibration_words,
    cannot_answer_note,
    prompt_cost,
)

if TYPE_CHECKING:
    from rich.console import RenderableType

    from latdoc.features.verify.arms import Plan


@dataclass(frozen=True)
class ConversationVerdict:
    """Every strategy's outcome against keeping everything, and where each is kept."""

    outcomes: tuple[StrategyOutcome, ...]
    descriptions: dict[str, str]
    dropped: dict[str, str]
    run_ids: dict[str, str]
    turns: int
    notes: tuple[StepNote, ...] = ()
    store_path: str = ""
    interrupted: bool = False
    reason: str | None = None
    """Why the conversation could not be held: its first request failed as every
    request to the endpoint would."""

    @property
    def not_applicable(self) -> bool:
        return self.reason is not None

    @property
    def gates_failed(self) -> bool:
        """No gates are checked on this experiment."""
        return False

    @property
    def page_kind(self) -> str:
        return "report"

    def document(self) -> dict[str, Any]:
        document = conversation_to_dict(
            self.outcomes,
            turns=self.turns,
            descriptions=self.descriptions,
            dropped=self.dropped,
            run_ids=self.run_ids,
        )
        document["notes"] = [{"step": str(n.step), "text": n.text} for n in self.notes]
        return document

    def shown(self) -> tuple[RenderableType, ...]:
        """Its table, then its notes."""
        return (self.renderable(), *(f"  Note: {note.text}" for note in self.notes))

    def renderable(self) -> RenderableType:
        return render_conversation(
            self.outcomes, turns=self.turns, descriptions=self.descriptions, dropped=self.dropped
        )

    def page(self) -> str:
        return render_conversation_html(
            self.outcomes, turns=self.turns, descriptions=self.descriptions, dropped=self.dropped
        )

    def kept(self) -> str:
        runs = ", ".join(f"{name} {run_id}" for name, run_id in self.run_ids.items())
        return f"Runs kept in {self.store_path}: {runs}"


@dataclass
class _Keeper:
    store: Store
    run_ids: dict[str, str] = field(default_factory=dict)
    records: list[TurnRecord] = field(default_factory=list)

    def keep(self, turn: ConversationTurn) -> None:
        self.records.append(TurnRecord(turn.strategy, turn.turn, turn.trace, turn.summary))
        step = Step.SUMMARY if turn.summary else Step.EXPERIMENT
        sample = Sample(step, turn.trace, cold=bool(turn.trace.new_connection), index=turn.turn)
        self.store.add_sample(self.run_ids[turn.strategy], sample)


def verify_conversation(
    plan: Plan,
    *,
    store: Store,
    on_progress: ProgressHook | None = None,
) -> ConversationVerdict:
    """Hold the conversation under ``keep`` and each strategy of ``plan``; compare them."""
    chat = plan.options_as(ConversationOptions)
    strategies = parse_strategies(chat.strategies)
    describe = {KEEP: "the whole history every turn"}
    describe |= {s.name: s.describe() for s in strategies}
    keeper = _Keeper(store)
    options = {
        "turns": chat.turns,
        "tokens_per_turn": chat.tokens_per_turn,
        "max_tokens": plan.max_tokens,
    }
    arms = [
        ArmRun(name, f"{name}: {text}", plan.endpoint.base_url, plan.endpoint.model, options)
        for name, text in describe.items()
    ]
    keeper.run_ids.update(open_verify_runs(store, "conversation", arms))
    conversation = ConversationPlan(
        endpoint=plan.endpoint,
        connection=plan.connection,
        strategies=strategies,
        turns=chat.turns,
        tokens_per_turn=chat.tokens_per_turn,
        max_tokens=plan.max_tokens,
        seed=plan.seed,
    )
    budget = budget_for(plan)
    told = _Told()
    interrupted = False
    try:
        asyncio.run(_converse(plan, conversation, budget, keeper, told, on_progress))
    except KeyboardInterrupt:
        interrupted = True
        told.notes.append(StepNote(Step.RUN, "interrupted by the user; compared what was measured"))
    for run_id in keeper.run_ids.values():
        store.finish_run(
            run_id,
            status="interrupted" if interrupted else "done",
            diagnosis=None,
            notes=told.notes,
        )
    return ConversationVerdict(
        outcomes=tuple(
            outcomes(keeper.records, chat.turns, order=list(describe), seed=plan.seed or 0)
        ),
        descriptions=describe,
        dropped=told.dropped,
        run_ids=dict(keeper.run_ids),
        turns=chat.turns,
        notes=tuple(told.notes),
        store_path=store.path,
        interrupted=interrupted,
        reason=told.reason,
    )


@dataclass
class _Told:
    """What the conversation told as it went: its notes, the text each strategy dropped,
    and why it could not be held at all."""

    notes: list[StepNote] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    reason: str | None = None


async def _converse(
    plan: Plan,
    conversation: ConversationPlan,
    budget: Budget,
    keeper: _Keeper,
    told: _Told,
    on_progress: ProgressHook | None,
) -> None:
    """Calibrate prompt lengths on the endpoint, then hold the conversation under every
    strategy, each turn kept as it finishes."""
    rng = random.Random(plan.seed)
    tokens = conversation.tokens_per_turn
    for words in calibration_words(tokens):
        budget.reserve(prompt_cost(ASSUMED, words), 1)
    async with plan.connection.session(plan.endpoint) as session:
        try:
            calibration, _ = await calibrate(session, rng, near_tokens=tokens)
        except CalibrationFailed as exc:
            if (error := exc.cannot_answer) is not None:
                told.notes.append(StepNote(Step.RUN, cannot_answer_note(error)))
                told.reason = f"the endpoint cannot answer: {error}; {error.cannot_answer}"
                return
            told.notes.append(StepNote(Step.CALIBRATION, f"{exc}; 1 token per word assumed"))
            calibration = ASSUMED
    result = await run_conversations(
        conversation,
        calibration,
        budget,
        on_turn=keeper.keep,
        on_progress=lambda done, total: on_progress("turns", done, total) if on_progress else None,
    )
    told.notes.extend(result.notes)
    told.dropped.update(result.dropped)
