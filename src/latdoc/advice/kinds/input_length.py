"""Remedies for ``input_length``: a long prompt is trimmed to a window (its gain modelled
by the length curve), summarised or cached; and, as trade-offs, a model served for long
context or a smaller one.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice import keys
from latdoc.advice._common import (
    SMALLER_MODEL_EFFECTS,
    TRIMMED_PROMPT_EFFECTS,
    another_model,
    smaller_model,
)
from latdoc.advice._sizing import SUMMARY_AFTER_TURNS, TRIM_WINDOW_TOKENS, trim_window
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.advice.verify import (
    CONVERSATION_STRATEGIES,
    VERIFY_CONVERSATION,
    VERIFY_PROMPT_CACHE,
    VERIFY_TRIM,
    checked,
    verify_command,
)
from latdoc.i18n import N_, Message
from latdoc.model import (
    CostChange,
    Diagnosis,
    Effects,
    Finding,
    Kind,
    QualityRisk,
    Remedy,
    RunContext,
)

__all__ = ["BUILDER", "input_length_remedies"]


def input_length_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    long_tokens = int(f.evidence.get("long_tokens", 0))
    window = trim_window(long_tokens) if long_tokens else TRIM_WINDOW_TOKENS
    yield _trim_window(f, d, ctx, long_tokens, window)
    yield _summarize_history(f, ctx, long_tokens)
    if long_tokens > window:
        yield Remedy(
            keys.PROMPT_CACHE,
            N_("Keep the prompt's start the same so the server can cache it"),
            f.kind,
            N_(
                "Put the fixed parts first (system prompt, documents, older turns) and the new "
                "turn last; where the provider caches prompt prefixes, a repeated prefix skips "
                "its prefill."
            ),
            None,
            verify_command=verify_command(
                ctx, VERIFY_PROMPT_CACHE, prefix_tokens=long_tokens - window
            ),
        )
    yield another_model(
        keys.LONG_CONTEXT_MODEL,
        N_("Prefer a model served for long context"),
        f.kind,
        N_(
            "A model and server built for 128K+ context (FlashAttention/PagedAttention "
            "serving) keep prefill linear where classic serving degrades past ~4K tokens."
        ),
        N_("another model: check quality and price on your own task first"),
        ctx,
    )
    yield smaller_model(
        f.kind,
        N_("e.g. a 7B instead of a 72B, or INT8/INT4 weights: prefill and decode both get faster."),
        ctx,
    )


def _trim_window(
    f: Finding, d: Diagnosis, ctx: RunContext, long_tokens: int, window: int
) -> Remedy:
    """Trimming to ``window`` tokens, its gain the length curve's prediction for the long
    prompt less its prediction for the window, given only with the curve's interval: a
    gain the fit cannot bound is not printed."""
    curve = d.length
    gain: float | None = None
    interval = None
    if curve is not None and long_tokens > window:
        interval = curve.difference_interval_ms(long_tokens, window)
        if interval is not None:
            gain = max(0.0, curve.predict_ms(long_tokens) - curve.predict_ms(window))
    rate = f.evidence.get("prefill_per_1k_ms")
    rate_text = (
        Message(" (prefill costs {rate:.0f} ms per 1K tokens here)", rate=rate) if rate else ""
    )
    command = (
        verify_command(ctx, VERIFY_TRIM, **{"from": long_tokens, "to": window})
        if long_tokens > window
        else None
    )
    return Remedy(
        keys.TRIM_WINDOW,
        Message("Trim the context to a sliding window of ~{window} tokens", window=window),
        f.kind,
        checked(
            Message(
                "Keep the system prompt and the most recent ~{window} tokens of history"
                "{rate}:\n"
                "  messages = [system, *last_turns_within(history, budget_tokens={window})]",
                window=window,
                rate=rate_text,
            ),
            command,
        ),
        gain,
        gain_interval_ms=interval if gain is not None else None,
        gain_source="fitted" if gain is not None else None,
        verify_command=command,
    )


def _summarize_history(f: Finding, ctx: RunContext, long_tokens: int) -> Remedy:
    """Summarising old turns, verified by a conversation long enough to need a summary,
    each turn a share of the long prompt (1,000 tokens when the finding gave none)."""
    per_turn = max(1, long_tokens // SUMMARY_AFTER_TURNS) if long_tokens else 1000
    return Remedy(
        keys.SUMMARIZE_HISTORY,
        N_("Compress old turns into a summary"),
        f.kind,
        N_(
            "Beyond ~10 turns, replace the oldest turns with a model-written summary, and "
            "start a fresh conversation carrying the summary every ~20 turns."
        ),
        None,
        verify_command=verify_command(
            ctx,
            VERIFY_CONVERSATION,
            turns=2 * SUMMARY_AFTER_TURNS,
            tokens_per_turn=per_turn,
            strategies=CONVERSATION_STRATEGIES,
        ),
    )


BUILDER = RemedyBuilder(
    Kind.INPUT_LENGTH,
    input_length_remedies,
    {
        keys.TRIM_WINDOW: TRIMMED_PROMPT_EFFECTS,
        keys.PROMPT_CACHE: Effects(
            CostChange.LOWER, cost_why=N_("a cached prefix is billed at the cached rate")
        ),
        keys.SUMMARIZE_HISTORY: Effects(
            CostChange.LOWER,
            QualityRisk.MAY_CHANGE,
            cost_why=N_("fewer prompt tokens a turn, less the summaries' own requests"),
            quality_why=N_("the model reads a summary of the old turns, not the turns"),
        ),
        keys.SMALLER_MODEL: SMALLER_MODEL_EFFECTS,
        keys.LONG_CONTEXT_MODEL: Effects(
            CostChange.HIGHER,
            QualityRisk.MAY_CHANGE,
            cost_why=N_("a model served for long context is usually dearer a token"),
            quality_why=N_("another model answers differently"),
        ),
    },
)
