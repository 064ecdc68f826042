"""``reasoning``: a model that thinks before its first answer token.

Its share is the median over successful requests of the time thinking before the
answer (:func:`~latdoc.analysis.pace.thinking_ms`: streamed, from the first
reasoning output to the first answer token; else the reported reasoning tokens
times the steady time per token), 0 for a request that did not think. It fires from
:data:`REASONING_MIN_MS`; the noticeable bar then decides whether it contributes.
"""

from __future__ import annotations

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind

__all__ = ["REASONING_MIN_MS", "SPEC", "reasoning"]

REASONING_MIN_MS = 100.0


def reasoning(f: Facts) -> Finding | None:
    """The reasoning finding, or ``None`` when thinking adds less than the threshold."""
    r = f.reasoning
    share = r.get("reasoning_ms")
    if share is None or share < REASONING_MIN_MS:
        return None
    n = int(r.get("reasoning_n") or 0)
    hidden = int(r.get("hidden_n") or 0)
    how = (
        Message("from the first reasoning output to the first answer token")
        if not hidden
        else Message(
            "({hidden} of {n} not streamed: reported reasoning tokens × time per token)",
            hidden=hidden,
            n=n,
        )
    )
    tokens = r.get("reasoning_tokens")
    told = Message(", {tokens:.0f} reasoning tokens", tokens=tokens) if tokens is not None else ""
    return Finding(
        Kind.REASONING,
        N_("The model thinks before it answers"),
        Message(
            "median {share:.0f} ms thinking before the first answer token (≥ {limit:.0f} ms), "
            "{how}{told}",
            share=share,
            limit=REASONING_MIN_MS,
            how=how,
            told=told,
        ),
        {k: v for k, v in r.items() if v is not None},
        share_ms=share,
        n=n,
        confidence=confidence(n, share / REASONING_MIN_MS - 1),
    )


SPEC = KindSpec(
    Kind.REASONING,
    N_("Reasoning"),
    N_("the model thinks before its first answer token"),
    colour="#b36bc9",
    rule=reasoning,
    in_the_slot=True,
)
