"""Remedies for ``stalls``: a bound on the wait between chunks, chosen between the
stream's normal gaps and its stalls (:mod:`latdoc.advice._stall`).
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice import keys
from latdoc.advice._stall import stall_timeout
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.i18n import N_
from latdoc.model import Diagnosis, Effects, Finding, Kind, Remedy, RunContext

__all__ = ["BUILDER", "stalls_remedies"]


def stalls_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    yield Remedy(
        keys.STALL_TIMEOUT,
        N_("Bound the wait between chunks"),
        f.kind,
        stall_timeout(f.evidence).change,
        None,
    )


BUILDER = RemedyBuilder(Kind.STALLS, stalls_remedies, {keys.STALL_TIMEOUT: Effects()})
