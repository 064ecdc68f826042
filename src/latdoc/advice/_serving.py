"""The remedies for the server's time: a long prompt is trimmed to a window (its gain
modelled by the length curve), summarised or cached; a queue is met by spreading
requests out; slow decode by asking for fewer tokens; stalls by a bound on the wait
between chunks; and, as trade-offs, another model.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice._common import another_model, async_client, retries, smaller_model
from latdoc.advice._sizing import SUMMARY_AFTER_TURNS, TRIM_WINDOW_TOKENS, trim_window
from latdoc.advice._stall import stall_timeout
from latdoc.advice.verify import CONVERSATION_STRATEGIES, WATCH_NAME, verify_command, watch_command
from latdoc.model import Diagnosis, Finding, Kind, Remedy, RunContext

__all__ = [
    "decode_remedies",
    "input_length_remedies",
    "queueing_remedies",
    "stalls_remedies",
]


def input_length_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    curve = d.length
    long_tokens = int(f.evidence.get("long_tokens", 0))
    window = trim_window(long_tokens) if long_tokens else TRIM_WINDOW_TOKENS
    gain: float | None = None
    interval = None
    if curve is not None and long_tokens > window:
        interval = curve.difference_interval_ms(long_tokens, window)
        if interval is not None:
            gain = max(0.0, curve.predict_ms(long_tokens) - curve.predict_ms(window))
    rate = f.evidence.get("prefill_per_1k_ms")
    rate_text = f" (prefill costs {rate:.0f} ms per 1K tokens here)" if rate else ""
    yield Remedy(
        "trim_window",
        f"Trim the context to a sliding window of ~{window} tokens",
        Kind.INPUT_LENGTH,
        f"Keep the system prompt and the most recent ~{window} tokens of history"
        f"{rate_text}:\n"
        "  messages = [system, *last_turns_within(history, budget_tokens="
        f"{window})]",
        gain,
        gain_interval_ms=interval if gain is not None else None,
        gain_source="fitted" if gain is not None else None,
        verify_command=verify_command(ctx, "trim", **{"from": long_tokens, "to": window})
        if long_tokens > window
        else None,
    )
    per_turn = max(1, long_tokens // SUMMARY_AFTER_TURNS) if long_tokens else 1000
    yield Remedy(
        "summarize_history",
        "Compress old turns into a summary",
        Kind.INPUT_LENGTH,
        "Beyond ~10 turns, replace the oldest turns with a model-written summary, and "
        "start a fresh conversation carrying the summary every ~20 turns.",
        None,
        verify_command=verify_command(
            ctx,
            "conversation",
            turns=2 * SUMMARY_AFTER_TURNS,
            tokens_per_turn=per_turn,
            strategies=CONVERSATION_STRATEGIES,
        ),
    )
    if long_tokens > window:
        yield Remedy(
            "prompt_cache",
            "Keep the prompt's start the same so the server can cache it",
            Kind.INPUT_LENGTH,
            "Put the fixed parts first (system prompt, documents, older turns) and the new "
            "turn last; where the provider caches prompt prefixes, a repeated prefix skips "
            "its prefill.",
            None,
            verify_command=verify_command(ctx, "prompt-cache", prefix_tokens=long_tokens - window),
        )
    yield another_model(
        "long_context_model",
        "Prefer a model served for long context",
        Kind.INPUT_LENGTH,
        "A model and server built for 128K+ context (FlashAttention/PagedAttention "
        "serving) keep prefill linear where classic serving degrades past ~4K tokens.",
        "another model: check quality and price on your own task first",
        ctx,
    )
    yield smaller_model(
        Kind.INPUT_LENGTH,
        "e.g. a 7B instead of a 72B, or INT8/INT4 weights: prefill and decode both get faster.",
        ctx,
    )


def queueing_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    yield Remedy(
        "spread_requests",
        "Spread requests out; avoid bursts and the provider's peak hours",
        Kind.QUEUEING,
        "Send through an asyncio.Semaphore sized to the provider's limit instead of "
        "bursts (asyncio.gather of everything at once); schedule batch work off-peak.",
        None,
        how_to_measure=f"`{watch_command(ctx)}` for a day, then `latdoc report --watch "
        f"{WATCH_NAME} --by hour-of-day`: the peak hours' TTFT against the off-peak ones, "
        "with the ratio, its interval and significance",
    )
    yield async_client(Kind.QUEUEING)
    yield retries(Kind.QUEUEING, None, ctx)


def decode_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    tpot = f.evidence.get("tpot_ms", 0.0)
    yield Remedy(
        "max_tokens",
        "Ask for no more output than the answer needs",
        Kind.DECODE,
        f"Each output token costs ~{tpot:.0f} ms here: set max_tokens to the answer's "
        "real length and ask for concise answers in the prompt.",
        None,
        verify_command=verify_command(ctx, "max-tokens"),
    )
    yield smaller_model(
        Kind.DECODE,
        "Decode speed grows as the model shrinks (e.g. 7B instead of 72B, INT8/INT4).",
        ctx,
    )


def stalls_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    yield Remedy(
        "stall_timeout",
        "Bound the wait between chunks",
        Kind.STALLS,
        stall_timeout(f.evidence).change,
        None,
    )
