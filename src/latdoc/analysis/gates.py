"""Regression gates: ``--fail-if "ttft_p50 > +10%, tpot_p95 > +5ms"`` on a comparison of a
baseline A with a candidate B.

A gate names a metric (a key of :data:`~latdoc.analysis.compare.METRICS`), a quantile
(``p50``, ``p90``, ``p95``, ``p99``) and how much worse B may be than A: a share of
A's value (``+10%``) or a duration (``+5ms``). It is checked in every group of like
requests both sides have (:func:`~latdoc.analysis.compare.group_key`). A row fails
when B's quantile is worse than A's by more than the limit *and* B is significantly
worse in that tail: a one-sided Fisher exact test on how many of each side's
requests lie above the pooled quantile (Mood's median test at p50, its tail version
above), every row of every gate Holm-adjusted together at α
(:data:`~latdoc.analysis.policy.FAMILIES`, "gates"). A run no worse than its
baseline fails a gate at most α of the time, whatever the number of gates
(``bench/false_positives.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from latdoc.analysis.compare import METRICS, like_groups, ok_traces
from latdoc.analysis.policy import ALPHA, MIN_N
from latdoc.analysis.stats import holm, quantile
from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.records import Sample

QUANTILES = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}
_UNITS_MS = {"us": 0.001, "µs": 0.001, "ms": 1.0, "s": 1000.0}
_ONE = re.compile(
    r"^\s*(?P<metric>[a-z_]+)_(?P<q>p\d\d)\s*>\s*\+?\s*(?P<value>\d+(?:\.\d+)?)\s*"
    r"(?P<unit>%|us|µs|ms|s)\s*$"
)


@dataclass(frozen=True, slots=True)
class Gate:
    """How much worse than the baseline a metric's quantile may be."""

    metric: str
    quantile: str
    """``p50``, ``p90``, ``p95`` or ``p99``."""
    limit: float
    """A share of A's value (0.10 for ``+10%``) when :attr:`relative`, else ms."""
    relative: bool
    text: str

    def allowed_ms(self, a_ms: float) -> float:
        return a_ms * self.limit if self.relative else self.limit


def parse_gates(text: str) -> tuple[Gate, ...]:
    """``"ttft_p50 > +10%, tpot_p95 > +5ms"`` as gates; a :class:`UsageError` names the
    part it cannot read."""
    metrics = [key for key, _, _ in METRICS]
    gates = []
    for part in text.split(","):
        if not part.strip():
            continue
        match = _ONE.match(part)
        if match is None:
            raise UsageError(
                Message(
                    "--fail-if {gate!r}: write METRIC_pNN > +LIMIT, the limit a share (+10%) or "
                    "a duration (+5ms), e.g. 'ttft_p50 > +10%, tpot_p95 > +5ms'",
                    gate=part.strip(),
                )
            )
        metric, q, unit = match["metric"], match["q"], match["unit"]
        if metric not in metrics:
            raise UsageError(
                Message(
                    "--fail-if {gate!r}: metric {metric!r}: use one of {metrics}",
                    gate=part.strip(),
                    metric=metric,
                    metrics=", ".join(metrics),
                )
            )
        if q not in QUANTILES:
            raise UsageError(
                Message(
                    "--fail-if {gate!r}: quantile {q}: use one of {quantiles}",
                    gate=part.strip(),
                    q=q,
                    quantiles=", ".join(QUANTILES),
                )
            )
        value = float(match["value"])
        relative = unit == "%"
        limit = value / 100 if relative else value * _UNITS_MS[unit]
        gates.append(Gate(metric, q, limit, relative, part.strip()))
    if not gates:
        raise UsageError(N_("--fail-if is empty: e.g. 'ttft_p50 > +10%'"))
    return tuple(gates)


@dataclass(frozen=True, slots=True)
class GateRow:
    """One gate in one group of like requests."""

    gate: str
    group: str
    n_a: int
    n_b: int
    a_ms: float
    b_ms: float
    allowed_ms: float
    """How much worse B's quantile may be than A's, in ms."""
    crossed: bool
    """B's quantile is worse than A's by more than :attr:`allowed_ms`."""
    p_value: float
    """One-sided: B has more of its requests above the pooled quantile than A."""
    p_adjusted: float
    """Holm-adjusted over every row of every gate."""

    @property
    def failed(self) -> bool:
        return self.crossed and self.p_adjusted < ALPHA


@dataclass(frozen=True, slots=True)
class GateReport:
    rows: tuple[GateRow, ...]
    unchecked: tuple[str, ...]
    """Gates no group could check (too few requests a side, or the metric unmeasured)."""

    @property
    def failed(self) -> tuple[GateRow, ...]:
        return tuple(r for r in self.rows if r.failed)


def tail_p(a: Sequence[float], b: Sequence[float], q: float) -> float:
    """One-sided p that B lies above A in the tail at quantile ``q``: Fisher's exact
    test on the counts above the pooled quantile."""
    from scipy.stats import fisher_exact

    pooled = quantile(np.concatenate([a, b]), q)
    above_a = int(np.sum(np.asarray(a) > pooled))
    above_b = int(np.sum(np.asarray(b) > pooled))
    table = [[above_b, len(b) - above_b], [above_a, len(a) - above_a]]
    return float(fisher_exact(table, alternative="greater").pvalue)


def check_gates(a: Sequence[Sample], b: Sequence[Sample], gates: Sequence[Gate]) -> GateReport:
    """Every gate in every group of like requests of A (the baseline) and B."""
    reads = {key: read for key, _, read in METRICS}
    groups_a = like_groups(a)
    groups_b = like_groups(b)
    common = sorted(groups_a.keys() & groups_b.keys())
    raw: list[tuple[Gate, str, list[float], list[float]]] = []
    for gate in gates:
        read = reads[gate.metric]
        for key in common:
            va = [v for t in ok_traces(groups_a[key]) if (v := read(t)) is not None]
            vb = [v for t in ok_traces(groups_b[key]) if (v := read(t)) is not None]
            if len(va) >= MIN_N and len(vb) >= MIN_N:
                raw.append((gate, key.label(), va, vb))
    ps = [tail_p(va, vb, QUANTILES[g.quantile]) for g, _, va, vb in raw]
    adjusted = holm(ps)
    rows = []
    for (gate, label, va, vb), p, p_adj in zip(raw, ps, adjusted, strict=True):
        q = QUANTILES[gate.quantile]
        a_ms, b_ms = quantile(va, q), quantile(vb, q)
        allowed = gate.allowed_ms(a_ms)
        rows.append(
            GateRow(gate.text, label, len(va), len(vb), a_ms, b_ms, allowed,
                    b_ms - a_ms > allowed, p, 1.0 if p_adj is None else p_adj)
        )  # fmt: skip
    checked = {r.gate for r in rows}
    return GateReport(tuple(rows), tuple(g.text for g in gates if g.text not in checked))
