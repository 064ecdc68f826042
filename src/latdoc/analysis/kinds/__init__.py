"""Every kind of slow latdoc names, one module each, and the one list of them: :data:`KINDS`.

Each module holds a kind's rule and the thresholds it fires at, and its
:class:`KindSpec` (name, meaning, colour and how the verdict and the reports treat
it). A new kind is a member of :class:`~latdoc.model.Kind`, a module here and a line
in :data:`KINDS`; the attribution, the noticeable bar and every renderer read the
specs, and the advice gives a kind its remedies in :mod:`latdoc.advice.builders`.
"""

from __future__ import annotations

from latdoc.analysis.kinds import (
    agent,
    buffering,
    client,
    decode,
    errors,
    healthy,
    input_length,
    network_path,
    network_setup,
    queueing,
    reasoning,
    stalls,
)
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.model import Kind

__all__ = ["KINDS", "KindSpec", "spec_of", "specs"]

KINDS: tuple[KindSpec, ...] = (
    errors.SPEC,
    network_setup.SPEC,
    network_path.SPEC,
    input_length.SPEC,
    queueing.SPEC,
    stalls.SPEC,
    buffering.SPEC,
    decode.SPEC,
    reasoning.SPEC,
    client.SPEC,
    agent.SPEC,
    healthy.SPEC,
)
"""Every kind, in the order their rules run: the order of a diagnosis's findings. A kind
without a rule is ``healthy`` (the verdict when no rule's finding stands out) or one of
:data:`~latdoc.model.RUN_KINDS` (named of an agent's run as a whole)."""


def specs() -> tuple[KindSpec, ...]:
    """Every kind's spec, in :data:`KINDS` order."""
    return KINDS


def spec_of(kind: Kind) -> KindSpec:
    """``kind``'s spec; a kind without one is a bug: :class:`LookupError` names it."""
    for spec in KINDS:
        if spec.kind == kind:
            return spec
    raise LookupError(f"no spec for kind {kind!r}: add its module to latdoc.analysis.kinds.KINDS")
