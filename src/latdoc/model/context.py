"""What the analysis of a run needs besides its traces: :class:`RunContext`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from latdoc.model.cost import Price
from latdoc.model.host import HostFacts
from latdoc.model.priorities import Priorities, Scenario
from latdoc.records import StepNote
from latdoc.reference import ReferenceProfile

__all__ = ["Preset", "RunContext"]


@dataclass(frozen=True)
class Preset:
    """The ``--provider`` preset a run sent with, as its advice needs it: the verify
    commands it names send with the same preset (its key variables, its quirks)."""

    name: str
    """The ``--provider`` value."""
    reasoning_effort: str | None = None
    """The one ``--reasoning-effort`` its requests take, where its only lever is a
    switch that turns thinking off (``none``); ``None``: the dialect's efforts."""


@dataclass(frozen=True)
class RunContext:
    """What the analysis needs besides traces; gathered by the caller (no I/O here)."""

    run_id: str
    endpoint: str
    model: str
    scenario: Scenario = Scenario.CHAT
    priorities: Priorities | None = None
    """The user's priorities (``--priorities``); None for :attr:`scenario`'s preset."""
    concurrency: int = 1
    """The concurrency the user expects in production (for pool sizing)."""
    prompt_tokens: int | None = None
    """The prompt tokens of the user's typical request (``diagnose --prompt-tokens``): the
    shares, the noticeable bar and the verdict are for a request of this prompt, read
    from the fitted length curve; None for the seed's long prompt (2K tokens)."""
    prompt_source: Literal["told", "recorded"] = "told"
    """Where :attr:`prompt_tokens` came from: ``told`` by the user, or ``recorded``: the
    median of the recorded requests' prompts, where traffic was diagnosed and the user
    told none."""
    cpu_count: int = 1
    tcp_settings: Mapping[str, int] = field(default_factory=dict)
    """``net.ipv4.*`` values of the client host, by sysctl name."""
    notes: tuple[StepNote, ...] = ()
    host: HostFacts | None = None
    """The client host's checklist facts, as the run recorded them."""
    server_metrics: Mapping[str, float | None] = field(default_factory=dict)
    """What the engine's own metrics counted during the run (after − before)."""
    server_metrics_source: str | None = None
    """Where those metrics were scraped, in words."""
    price: Price | None = None
    """The model's price the run was counted at; ``None`` where latdoc knew none."""
    preset: Preset | None = None
    """The ``--provider`` preset the run sent with; ``None`` for none."""
    reference: ReferenceProfile | None = None
    """What healthy is for this run (``diagnose --reference FILE``); ``None`` for the
    profile latdoc ships (:func:`latdoc.healthy_reference`)."""

    @property
    def ranked_for(self) -> Priorities:
        """What the remedies are ranked for: the user's priorities, else the scenario's."""
        return self.priorities or Priorities.preset(self.scenario)
