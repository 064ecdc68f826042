"""Remedies for ``decode``: ask for no more output than the answer needs; as a trade-off,
a smaller model.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice import keys
from latdoc.advice._common import SMALLER_MODEL_EFFECTS, smaller_model
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.advice.verify import VERIFY_MAX_TOKENS, checked, verify_command
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

__all__ = ["BUILDER", "decode_remedies"]


def decode_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    tpot = f.evidence.get("tpot_ms", 0.0)
    command = verify_command(ctx, VERIFY_MAX_TOKENS)
    yield Remedy(
        keys.MAX_TOKENS,
        N_("Ask for no more output than the answer needs"),
        f.kind,
        checked(
            Message(
                "Each output token costs ~{tpot:.0f} ms here: set max_tokens to the answer's "
                "real length and ask for concise answers in the prompt.",
                tpot=tpot,
            ),
            command,
        ),
        None,
        verify_command=command,
    )
    yield smaller_model(
        f.kind,
        N_("Decode speed grows as the model shrinks (e.g. 7B instead of 72B, INT8/INT4)."),
        ctx,
    )


BUILDER = RemedyBuilder(
    Kind.DECODE,
    decode_remedies,
    {
        keys.MAX_TOKENS: Effects(
            CostChange.LOWER,
            QualityRisk.MAY_CHANGE,
            cost_why=N_("fewer output tokens billed"),
            quality_why=N_("an answer longer than the cap is cut off"),
        ),
        keys.SMALLER_MODEL: SMALLER_MODEL_EFFECTS,
    },
)
