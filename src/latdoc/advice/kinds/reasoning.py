"""Remedies for ``reasoning``: a model that thinks before it answers.

Thinking is output the user never reads on the latency-critical path: a lower
reasoning effort (OpenAI) or thinking budget (Anthropic) shortens it, a model that
does not reason removes it. Neither gain is printed from this run: ``latdoc verify
--remedy reasoning-effort`` and ``--remedy model`` measure them on the endpoint. Where
a ``--provider`` preset's only lever is a switch that turns thinking off (DashScope's
``enable_thinking``), the command asks for what the switch takes.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice import keys
from latdoc.advice._common import another_model
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.advice.verify import VERIFY_REASONING_EFFORT, checked, verify_command
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

__all__ = ["BUILDER", "reasoning_remedies"]


def reasoning_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    tokens = f.evidence.get("reasoning_tokens")
    spent = Message("{tokens:.0f} reasoning tokens, ", tokens=tokens) if tokens is not None else ""
    command = verify_command(ctx, VERIFY_REASONING_EFFORT, reasoning_effort=_lighter(ctx))
    yield Remedy(
        keys.REASONING_EFFORT,
        N_("Lower the reasoning effort or thinking budget"),
        f.kind,
        checked(
            Message(
                "Thinking took {spent}~{ms:.0f} ms before the first answer token here:\n"
                '  OpenAI chat: reasoning_effort="low" (or "minimal")\n'
                '  OpenAI Responses: reasoning={{"effort": "low"}}\n'
                '  Anthropic: thinking={{"type": "enabled", "budget_tokens": 1024}}, or disabled',
                spent=spent,
                ms=f.share_ms,
            ),
            command,
        ),
        None,
        tradeoff=N_("less thinking can mean worse answers on hard questions"),
        verify_command=command,
    )
    yield another_model(
        keys.NON_REASONING_MODEL,
        N_("A non-reasoning model on the latency-critical path"),
        f.kind,
        N_(
            "Route the requests a user waits for to a model that answers at once; keep the "
            "reasoning model for the questions that need it."
        ),
        N_("lower quality on questions that need reasoning"),
        ctx,
    )


def _lighter(ctx: RunContext) -> str:
    """The effort verify's arm B asks for: ``low``, or the one a preset whose only lever
    is a thinking switch takes (thinking off), which refuses any other."""
    preset = ctx.preset
    return "low" if preset is None or preset.reasoning_effort is None else preset.reasoning_effort


BUILDER = RemedyBuilder(
    Kind.REASONING,
    reasoning_remedies,
    {
        keys.REASONING_EFFORT: Effects(
            CostChange.LOWER,
            QualityRisk.MAY_LOWER,
            cost_why=N_("fewer reasoning tokens billed"),
            quality_why=N_("less thinking can mean worse answers on hard questions"),
        ),
        keys.NON_REASONING_MODEL: Effects(
            CostChange.LOWER,
            QualityRisk.MAY_LOWER,
            cost_why=N_("no reasoning tokens billed"),
            quality_why=N_("worse answers on questions that need reasoning"),
        ),
    },
)
