"""The answer of ``latdoc load --find-max`` as data: each level it probed
(:class:`Probe`), and the most load that met the SLO, with what it rests on, in words
(:class:`FindMax`), and as the document a run keeps and reads back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from latdoc.features.load.analysis._objectives import Objective, Reading

OVER_SATURATION = 0.10
"""By rate: a level that sent less than this share under its asked rate is
over-saturated (the endpoint held requests open until the client could not keep the
pace), and fails."""
MAX_ROUNDS = 3
"""Rounds of ``--duration-per-level`` a level may run before it is judged by its point."""


@dataclass(frozen=True, slots=True)
class Probe:
    """One level as the search judged it."""

    streams: float
    """The level: streams, or requests per second when the search is by rate."""
    rounds: int
    requests: int
    failed: int
    readings: tuple[Reading, ...]
    passed: bool
    decided: bool
    """False when an interval still held a limit after :data:`MAX_ROUNDS` rounds."""
    too_many_errors: bool
    achieved: float | None = None
    """By rate: the rate asked times the share of the arrivals its schedule drew that
    were sent and finished."""

    @property
    def over_saturated(self) -> bool:
        return self.achieved is not None and self.achieved < self.streams * (1 - OVER_SATURATION)


@dataclass(frozen=True)
class FindMax:
    objectives: tuple[Objective, ...]
    probes: tuple[Probe, ...]
    """In the order they ran."""
    best: float | None
    """The highest level that passed."""
    first_failed: float | None
    """The lowest level that failed (above :attr:`best`), or None when none did."""
    broke: str | None
    """What broke the SLO first: errors, queueing, prefill or decode."""
    limit: float
    by_rate: bool = False
    on_turns: bool = False
    """Judged on the user turns of a replayed conversation or agent (what the user
    waited, from a turn's first request to its answer), not on each request."""

    def _level(self, value: float) -> str:
        return self._levels([value])

    def _levels(self, values: Sequence[float]) -> str:
        """Levels in one phrase: ``1 stream``, ``1, 2 and 4 streams``, ``10 requests/s``."""
        said = [f"{v:.3g}" if self.by_rate else f"{v:g}" for v in values]
        listed = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
        if self.by_rate:
            return f"{listed} requests/s"
        return f"{listed} stream" if said == ["1"] else f"{listed} streams"

    @property
    def headline(self) -> str:
        """The answer in one line, which the terminal and the page lead with."""
        slo = ", ".join(o.text for o in self.objectives)
        if self.on_turns:
            slo += ", on the user's turns"
        if self.best is None:
            first = self.probes[0].streams if self.probes else 1
            return f"No level met the SLO ({slo}): even {self._level(first)} failed it"
        if self.first_failed is None:
            return f"{self._level(self.best)} met the SLO ({slo}), and no level tried failed it"
        return f"The most load that meets the SLO ({slo}): {self._level(self.best)}"

    @property
    def detail(self) -> str:
        """What the headline rests on: the level that failed, what broke the SLO first,
        and the levels judged by their point estimate."""
        parts: list[str] = []
        if self.best is not None and self.first_failed is not None:
            parts.append(f"{self._level(self.first_failed)} failed it, so the capacity lies "
                         "between")  # fmt: skip
        elif self.best is not None and self.best >= self.limit:
            parts.append(f"The search stopped at its limit of {self._level(self.limit)}")
        elif self.best is not None:
            parts.append(f"The search stopped at {self._level(self.best)}, its budget spent "
                         "(--max-requests, --max-cost, --token-budget)")  # fmt: skip
        if self.broke is not None:
            parts.append(_BROKE[self.broke])
        undecided = sorted(p.streams for p in self.probes if not p.decided)
        if len(undecided) == 1:
            parts.append(f"After {MAX_ROUNDS} rounds the 95% interval at "
                         f"{self._level(undecided[0])} still spanned the limit, so that "
                         "level was judged by its point estimate; a longer "
                         "--duration-per-level would decide it")  # fmt: skip
        elif undecided:
            parts.append(f"After {MAX_ROUNDS} rounds the 95% intervals at "
                         f"{self._levels(undecided)} still spanned the limit, so those "
                         "levels were judged by their point estimates; a longer "
                         "--duration-per-level would decide them")  # fmt: skip
        return ". ".join(parts) + ("." if parts else "")

    def sentence(self) -> str:
        """The headline and what it rests on, as one paragraph."""
        return f"{self.headline}. {self.detail}".rstrip(" ")

    def document(self) -> dict[str, Any]:
        return {
            "objectives": [
                {"metric": o.metric, "quantile": o.q, "limit_ms": o.limit_ms}
                for o in self.objectives
            ],
            "by": "rate" if self.by_rate else "concurrency",
            "judged_on": "user_turns" if self.on_turns else "requests",
            "best_streams": None if self.by_rate else self.best,
            "first_failed_streams": None if self.by_rate else self.first_failed,
            "best_rate": self.best if self.by_rate else None,
            "first_failed_rate": self.first_failed if self.by_rate else None,
            "broke": self.broke,
            "limit": self.limit,
            "probes": [
                {
                    "streams": p.streams,
                    "rounds": p.rounds,
                    "requests": p.requests,
                    "failed": p.failed,
                    "passed": p.passed,
                    "decided": p.decided,
                    "too_many_errors": p.too_many_errors,
                    "achieved_rate": p.achieved,
                    "over_saturated": p.over_saturated,
                    "readings": [
                        {
                            "objective": r.objective.text,
                            "n": r.n,
                            "value_ms": r.value_ms,
                            "interval_ms": None if r.interval_ms is None else list(r.interval_ms),
                            "verdict": r.verdict,
                        }
                        for r in p.readings
                    ],
                }
                for p in self.probes
            ],
        }

    @classmethod
    def from_document(cls, document: object) -> FindMax | None:
        """The answer a run's meta keeps (:meth:`document`), to show it again; ``None``
        where the run kept none, or one this version cannot read."""
        if not isinstance(document, Mapping):
            return None
        try:
            objectives = tuple(
                Objective(str(o["metric"]), float(o["quantile"]), float(o["limit_ms"]))
                for o in document["objectives"]
            )
            by_text = {o.text: o for o in objectives}
            probes = tuple(_probe(p, by_text) for p in document["probes"])
            by_rate = document["by"] == "rate"
            kind = "rate" if by_rate else "streams"
            return cls(objectives, probes, document[f"best_{kind}"],
                       document[f"first_failed_{kind}"], document["broke"],
                       float(document["limit"]), by_rate,
                       document.get("judged_on") == "user_turns")  # fmt: skip
        except (KeyError, TypeError, ValueError):
            return None


_BROKE = {
    "errors": "Errors broke it first: the failing level's failed share passed --max-error-rate",
    "queueing": "Queueing broke it first: the time to first token met its limit at one "
    "stream and grows past it under load",
    "prefill": "Prefill broke it first: the time to first token misses its limit even at one "
    "stream",
    "decode": "Decode broke it first: the time per output token grows past its limit",
}


def _probe(raw: Mapping[str, Any], objectives: Mapping[str, Objective]) -> Probe:
    """One probe as :meth:`FindMax.document` keeps it."""
    readings = tuple(
        Reading(objectives[r["objective"]], int(r["n"]), r["value_ms"],
                _interval(r["interval_ms"]), str(r["verdict"]))
        for r in raw["readings"]
    )  # fmt: skip
    return Probe(float(raw["streams"]), int(raw["rounds"]), int(raw["requests"]),
                 int(raw["failed"]), readings, bool(raw["passed"]), bool(raw["decided"]),
                 bool(raw["too_many_errors"]), raw["achieved_rate"])  # fmt: skip


def _interval(raw: Sequence[float] | None) -> tuple[float, float] | None:
    return None if raw is None else (float(raw[0]), float(raw[1]))
