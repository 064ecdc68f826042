"""Remedies for a model that thinks before it answers (:attr:`Kind.REASONING`).

Thinking is output the user never reads on the latency-critical path: a lower
reasoning effort (OpenAI) or thinking budget (Anthropic) shortens it, a model that
does not reason removes it. Neither gain is printed from this run: ``latdoc verify
--remedy reasoning-effort`` and ``--remedy model`` measure them on the endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice._common import another_model
from latdoc.advice.verify import verify_command
from latdoc.model import Diagnosis, Finding, Kind, Remedy, RunContext

__all__ = ["reasoning_remedies"]


def reasoning_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    tokens = f.evidence.get("reasoning_tokens")
    spent = f"{tokens:.0f} reasoning tokens, " if tokens is not None else ""
    yield Remedy(
        "reasoning_effort",
        "Lower the reasoning effort or thinking budget",
        Kind.REASONING,
        f"Thinking took {spent}~{f.share_ms:.0f} ms before the first answer token here:\n"
        '  OpenAI chat: reasoning_effort="low" (or "minimal")\n'
        '  OpenAI Responses: reasoning={"effort": "low"}\n'
        '  Anthropic: thinking={"type": "enabled", "budget_tokens": 1024}, or disabled',
        None,
        tradeoff="less thinking can mean worse answers on hard questions",
        verify_command=verify_command(ctx, "reasoning-effort", reasoning_effort="low"),
    )
    yield another_model(
        "non_reasoning_model",
        "A non-reasoning model on the latency-critical path",
        Kind.REASONING,
        "Route the requests a user waits for to a model that answers at once; keep the "
        "reasoning model for the questions that need it.",
        "lower quality on questions that need reasoning",
        ctx,
    )
