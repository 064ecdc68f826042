"""What gives one kind of slow its remedies, as data: :class:`RemedyBuilder`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from latdoc.model import Diagnosis, Effects, Finding, Kind, Remedy, RunContext

Build = Callable[[Finding, Diagnosis, RunContext], Iterator[Remedy]]
"""Reads a finding of its kind, the whole diagnosis and the run's context, and yields the
remedies: each the concrete change for httpx and the openai SDK, computed for this
machine, the user's settings and this run's numbers."""


@dataclass(frozen=True, slots=True)
class RemedyBuilder:
    """The remedies of one kind of slow."""

    kind: Kind
    build: Build
    effects: Mapping[str, Effects]
    """Every remedy ``build`` may give, by key, with what it does to cost and quality,
    in the kind's own order: where the user's priorities tell two remedies apart by
    nothing, the ranking keeps this order."""

    def effects_of(self, remedy: Remedy) -> Effects:
        """``remedy``'s effects; :class:`LookupError` for a remedy the kind does not
        declare (a builder that yields a remedy its registry entry lacks)."""
        try:
            return self.effects[remedy.key]
        except KeyError:
            raise LookupError(
                f"{self.kind} gives {remedy.key!r} but declares no effects for it"
            ) from None

    def place_of(self, remedy: Remedy) -> int:
        """Where ``remedy`` stands in the kind's own order."""
        return list(self.effects).index(remedy.key)
