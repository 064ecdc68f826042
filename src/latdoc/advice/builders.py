"""Which remedies each kind of slow gets: the one list, :data:`BUILDERS`.

Each kind's remedies are built in a module of their own (:mod:`latdoc.advice.kinds`),
which names its kind in a :class:`~latdoc.advice.kinds.RemedyBuilder` with every remedy
it may give and that remedy's effects on cost and quality. A kind may have several
builders, or none (``healthy``: nothing to remedy).
"""

from __future__ import annotations

from latdoc.advice.kinds import (
    Build,
    RemedyBuilder,
    buffering,
    client,
    decode,
    errors,
    input_length,
    network_path,
    network_setup,
    queueing,
    reasoning,
    stalls,
)
from latdoc.model import Kind

__all__ = ["BUILDERS", "Build", "RemedyBuilder", "builders_for"]

BUILDERS: tuple[RemedyBuilder, ...] = (
    network_setup.BUILDER,
    network_path.BUILDER,
    input_length.BUILDER,
    queueing.BUILDER,
    errors.BUILDER,
    decode.BUILDER,
    stalls.BUILDER,
    buffering.BUILDER,
    client.BUILDER,
    reasoning.BUILDER,
)
"""Every kind's remedy builders."""


def builders_for(kind: Kind) -> tuple[RemedyBuilder, ...]:
    """What builds ``kind``'s remedies and declares their effects, in :data:`BUILDERS`
    order; empty for none."""
    return tuple(b for b in BUILDERS if b.kind == kind)
