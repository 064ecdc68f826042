"""What gives one kind of slow its remedies, as data: :class:`RemedyBuilder`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from latdoc.model import Diagnosis, Finding, Kind, Remedy, RunContext

Build = Callable[[Finding, Diagnosis, RunContext], Iterator[Remedy]]
"""Reads a finding of its kind, the whole diagnosis and the run's context, and yields the
remedies: each the concrete change for httpx and the openai SDK, computed for this
machine, the user's settings and this run's numbers."""


@dataclass(frozen=True, slots=True)
class RemedyBuilder:
    """The remedies of one kind of slow."""

    kind: Kind
    build: Build
