"""What the user optimises for, in the seed's triangle of latency, cost and quality.

The seed's advice before any optimisation: order your application's priorities among
latency, cost and quality first, since many remedies trade one corner for another.
:class:`Priorities` is that order (``--priorities``), or the preset of a
:class:`Scenario` (``--scenario``); :class:`Effects` is what a remedy does to the two
corners besides latency, as ordinal classes said in words. The ranking that reads both
is :mod:`latdoc.advice.remedies`'s.
"""

from __future__ import annotations

import enum
import itertools
import math
from dataclasses import dataclass

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message

__all__ = [
    "Corner",
    "CostChange",
    "Effects",
    "Priorities",
    "QualityRisk",
    "Scenario",
    "parse_priorities",
]


class Scenario(enum.StrEnum):
    """The seed's three typical applications, each a preset of :class:`Priorities`
    (:data:`PRESETS`)."""

    CHAT = "chat"
    """Real-time chat: latency first."""
    BATCH = "batch"
    """Batch analysis: cost first."""
    LONGDOC = "longdoc"
    """Long-document understanding: quality first, with long input."""


class Corner(enum.StrEnum):
    """A corner of the seed's triangle."""

    LATENCY = "latency"
    COST = "cost"
    QUALITY = "quality"


_CORNER_WORDS = {
    Corner.LATENCY: N_("latency"),
    Corner.COST: N_("cost"),
    Corner.QUALITY: N_("quality"),
}
"""Each corner in words, translated where shown (its value is the flag's word)."""


class CostChange(enum.StrEnum):
    """What a remedy does to what the same work costs, by its sign: how much needs the
    user's price and traffic, which the ranking does not read. Listed cheaper first."""

    LOWER = "lower"
    NONE = "none"
    HIGHER = "higher"


class QualityRisk(enum.StrEnum):
    """What a remedy may do to the answers. Listed safer first: ``may_change`` answers
    differently, not worse as such (the model sees less context, its output is capped,
    another model answers); ``may_lower`` trades answer quality for speed, as the seed
    warns of quantised, distilled and smaller models."""

    NONE = "none"
    MAY_CHANGE = "may_change"
    MAY_LOWER = "may_lower"

    @property
    def words(self) -> str:
        return _QUALITY_WORDS[self]


_QUALITY_WORDS = {
    QualityRisk.NONE: N_("answers unchanged"),
    QualityRisk.MAY_CHANGE: N_("may change answers"),
    QualityRisk.MAY_LOWER: N_("may lower answer quality"),
}
_COST_WORDS = {
    CostChange.LOWER: N_("cost lower: {why}"),
    CostChange.HIGHER: N_("cost higher: {why}"),
}


@dataclass(frozen=True, slots=True)
class Effects:
    """What a remedy does to cost and quality, as its kind's registry declares it. Its
    effect on latency is not declared: it is the share of the kind it addresses, and
    its own gain where this run measured or fitted one."""

    cost: CostChange = CostChange.NONE
    quality: QualityRisk = QualityRisk.NONE
    cost_why: str | None = None
    """Why the cost changes, in words; None exactly when it does not."""
    quality_why: str | None = None
    """How the answers may change, in words; None exactly when they do not."""

    def __post_init__(self) -> None:
        if (self.cost is CostChange.NONE) != (self.cost_why is None):
            raise ValueError(f"a cost change {self.cost!r} says why, and only a change")
        if (self.quality is QualityRisk.NONE) != (self.quality_why is None):
            raise ValueError(f"a quality risk {self.quality!r} says how, and only a risk")

    def text(self) -> str | None:
        """``cost lower: fewer output tokens billed; may change answers: …``; None for a
        remedy that changes neither."""
        parts = []
        if self.cost is not CostChange.NONE:
            parts.append(Message(_COST_WORDS[self.cost], why=Message.of(self.cost_why or "")))
        if self.quality is not QualityRisk.NONE:
            parts.append(
                Message(
                    "{risk}: {why}",
                    risk=Message.of(self.quality.words),
                    why=Message.of(self.quality_why or ""),
                )
            )
        return Message.joined("; ", parts) if parts else None


@dataclass(frozen=True, slots=True)
class Priorities:
    """The corners the ranking of remedies reads, first first (see
    :mod:`latdoc.advice.remedies`).

    Given as an order (``latency,cost,quality``) or as weights
    (``latency=3,cost=1,quality=2``): weights order the corners, heaviest first, and a
    corner weighted 0 is not read. A share in milliseconds and a class such as "lower
    cost" have no common unit, so the weights are not summed: any rate of exchange
    between them would be a number latdoc made up.
    """

    order: tuple[Corner, ...]
    """The corners read, first first; one weighted 0 is not among them."""
    weights: tuple[float, ...] | None = None
    """The weights of :attr:`order`'s corners where the user gave weights; None for an
    order."""
    scenario: Scenario | None = None
    """The scenario whose preset these are; None for the user's own."""

    def __post_init__(self) -> None:
        if not self.order or len(set(self.order)) != len(self.order):
            raise ValueError(f"priorities need distinct corners, got {self.order!r}")
        if self.weights is not None and (
            len(self.weights) != len(self.order)
            or any(w <= 0 for w in self.weights)
            or list(self.weights) != sorted(set(self.weights), reverse=True)
        ):
            raise ValueError(f"weights {self.weights!r} do not order {self.order!r}")

    @classmethod
    def preset(cls, scenario: Scenario) -> Priorities:
        """The seed's order for ``scenario`` (:data:`PRESETS`)."""
        return cls(PRESETS[scenario], scenario=scenario)

    @property
    def not_read(self) -> tuple[Corner, ...]:
        """The corners weighted 0."""
        return tuple(c for c in Corner if c not in self.order)

    def text(self) -> str:
        """``latency > cost > quality (--scenario chat)``."""
        if self.weights is None:
            corners = [Message.of(_CORNER_WORDS[c]) for c in self.order]
        else:
            corners = [
                Message("{corner} ({weight:g})", corner=Message.of(_CORNER_WORDS[c]), weight=w)
                for c, w in zip(self.order, self.weights, strict=True)
            ]
        skipped = (
            Message(
                "; {corners} not read",
                corners=Message.joined(", ", [_CORNER_WORDS[c] for c in self.not_read]),
            )
            if self.not_read
            else ""
        )
        source = "--priorities" if self.scenario is None else f"--scenario {self.scenario}"
        return Message(
            "{corners}{skipped} ({source})",
            corners=Message.joined(" > ", corners),
            skipped=skipped,
            source=source,
        )

    def spec(self) -> str:
        """The ``--priorities`` text that gives these again (a run keeps it)."""
        if self.weights is None:
            return ",".join(self.order)
        given = dict(zip(self.order, self.weights, strict=True))
        return ",".join(f"{c}={given.get(c, 0.0):g}" for c in Corner)


PRESETS: dict[Scenario, tuple[Corner, ...]] = {
    Scenario.CHAT: (Corner.LATENCY, Corner.COST, Corner.QUALITY),
    Scenario.BATCH: (Corner.COST, Corner.LATENCY, Corner.QUALITY),
    Scenario.LONGDOC: (Corner.QUALITY, Corner.LATENCY, Corner.COST),
}
"""Each scenario's order, from the seed's own words (docs/method.md, "Ranking
remedies"): real-time chat puts latency first and tolerates less accurate answers
(the seed suggests quantised models for it); batch analysis puts cost first and takes a
cheaper model; long-document work puts quality first and pays for a long-context model."""

_FORM = N_(
    "name the three corners in order (latency,cost,quality) or weigh them "
    "(latency=3,cost=1,quality=2)"
)


def parse_priorities(text: str) -> Priorities:
    """``latency,cost,quality`` (an order) or ``latency=3,cost=1,quality=2`` (weights) as
    :class:`Priorities`.

    :class:`UsageError`, one line naming what is wrong, for an unknown or repeated
    corner, a corner left out, an order mixed with weights, a weight that is not a
    number or is negative, every weight 0, and two corners of the same weight (the
    ranking reads one before the other, so the user says which).
    """
    parts = [p.strip() for p in text.split(",")]
    named: dict[Corner, float | None] = {}
    for part in parts:
        name, equals, value = (s.strip() for s in part.partition("="))
        if name not in set(Corner):
            raise UsageError(
                Message(
                    "--priorities: unknown corner {name!r}: {form}",
                    name=name,
                    form=Message.of(_FORM),
                )
            )
        corner = Corner(name)
        if corner in named:
            raise UsageError(Message("--priorities: {corner} is named twice", corner=corner))
        named[corner] = _weight(corner, value) if equals else None
    missing = [c for c in Corner if c not in named]
    if missing:
        raise UsageError(
            Message(
                "--priorities leaves out {missing}: {form}",
                missing=Message.joined(N_(" and "), missing, names=True),
                form=Message.of(_FORM),
            )
        )
    weights = list(named.values())
    if all(w is None for w in weights):
        return Priorities(tuple(named))
    if any(w is None for w in weights):
        raise UsageError(
            Message(
                "--priorities gives weights to some corners only: {form}", form=Message.of(_FORM)
            )
        )
    given = {c: w for c, w in named.items() if w}
    if not given:
        raise UsageError(N_("--priorities: every weight is 0: at least one corner must count"))
    order = sorted(given, key=lambda c: -given[c])
    for first, second in itertools.pairwise(order):
        if given[first] == given[second]:
            raise UsageError(
                Message(
                    "--priorities: {first} and {second} weigh the same ({weight:g}): the ranking "
                    "reads one corner before another, so give them different weights",
                    first=first,
                    second=second,
                    weight=given[first],
                )
            )
    return Priorities(tuple(order), tuple(given[c] for c in order))


def _weight(corner: Corner, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or "_" in value or number < 0:
        raise UsageError(
            Message(
                "--priorities: {corner}={value!r} is not a weight (a number ≥ 0)",
                corner=corner,
                value=value,
            )
        )
    return number
