"""An SLO's objectives and one level read against them: ``--find-max --slo
ttft_p95=2s,tpot_p50=80ms``.

An :class:`Objective` is a quantile of a metric (TTFT, TPOT or the end-to-end time)
that must stay at or below a limit. A level's :class:`Reading` of it is the quantile's
point (:func:`~latdoc.analysis.stats.quantile`) and its 95% interval
(:func:`~latdoc.analysis.stats.quantile_interval`) over the level's successful
requests: ``pass`` when the whole interval lies at or below the limit, ``fail`` when it
lies above, else ``undecided``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from latdoc.analysis.quantities import duration
from latdoc.analysis.stats import quantile, quantile_interval
from latdoc.errors import UsageError
from latdoc.features.load.analysis._level import Slo
from latdoc.i18n import Message
from latdoc.records import RequestTrace

_METRICS: dict[str, Callable[[RequestTrace], float | None]] = {
    "ttft": lambda t: t.ttft_ms,
    "tpot": lambda t: t.tpot_ms,
    "e2e": lambda t: t.total_ms,
}
_ONE = re.compile(r"^(?P<metric>ttft|tpot|e2e)_p(?P<q>\d\d)$")


@dataclass(frozen=True, slots=True)
class Objective:
    """A quantile of a metric that must stay at or below a limit."""

    metric: str
    q: float
    limit_ms: float

    @property
    def text(self) -> str:
        return f"{self.metric}_p{round(self.q * 100):02d} ≤ {self.limit_ms:g} ms"


def objective(name: str, limit_ms: float) -> Objective:
    """``ttft_p95`` and a limit: an objective; a :class:`UsageError` for another name."""
    match = _ONE.match(name)
    if match is None or not 1 <= int(match["q"]) <= 99:
        raise UsageError(
            Message(
                "--slo {name}: with --find-max name a metric and a quantile: ttft_p95, tpot_p50, "
                "e2e_p99 (ttft, tpot or e2e; p01 to p99)",
                name=name,
            )
        )
    return Objective(match["metric"], int(match["q"]) / 100, limit_ms)


def parse_slo(text: str) -> tuple[Slo, tuple[Objective, ...]]:
    """``ttft=2s,tpot=100ms``: the objectives a request must meet to count as goodput;
    ``ttft_p95=2s,tpot_p50=80ms``: the quantiles ``--find-max`` holds each level to. A
    part it cannot read is a :class:`UsageError` showing the two forms."""
    expected = (
        f"--slo {text!r}: expected ttft=DURATION and/or tpot=DURATION, e.g. "
        "ttft=2s,tpot=100ms (or, with --find-max, ttft_p95=2s,tpot_p50=80ms)"
    )
    limits: dict[str, float] = {}
    objectives: list[Objective] = []
    for part in text.split(","):
        name, _, value = part.partition("=")
        name = name.strip().lower()
        try:
            ms = duration(value) * 1000.0
        except UsageError:
            raise UsageError(expected) from None
        if name in ("ttft", "tpot"):
            limits[name] = ms
        elif "_p" in name:
            objectives.append(objective(name, ms))
        else:
            raise UsageError(expected)
    return Slo(ttft_ms=limits.get("ttft"), tpot_ms=limits.get("tpot")), tuple(objectives)


@dataclass(frozen=True, slots=True)
class Reading:
    """One objective at one level."""

    objective: Objective
    n: int
    value_ms: float | None
    interval_ms: tuple[float, float] | None
    verdict: str
    """``pass``, ``fail`` or ``undecided`` (by the interval)."""


def read_level(
    objectives: Sequence[Objective], traces: Sequence[RequestTrace]
) -> tuple[Reading, ...]:
    """Each objective read over the level's successful requests."""
    ok = [t for t in traces if t.ok]
    values = {
        metric: [v for t in ok if (v := read(t)) is not None] for metric, read in _METRICS.items()
    }
    return read_values(objectives, values)


def read_values(
    objectives: Sequence[Objective], values: Mapping[str, Sequence[float]]
) -> tuple[Reading, ...]:
    """Each objective read over ``values``, a metric's by its name (``ttft``, ``tpot``,
    ``e2e``): a level's requests', or its user turns' (what the user waited)."""
    readings = []
    for o in objectives:
        mine = values.get(o.metric, ())
        ci = quantile_interval(mine, o.q) if mine else None
        point = quantile(mine, o.q) if mine else None
        if ci is not None and ci[1] <= o.limit_ms:
            verdict = "pass"
        elif ci is not None and ci[0] > o.limit_ms:
            verdict = "fail"
        else:
            verdict = "undecided"
        readings.append(Reading(o, len(mine), point, ci, verdict))
    return tuple(readings)
