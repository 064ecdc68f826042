"""Two stored runs and what their comparison found."""

from __future__ import annotations

from dataclasses import dataclass

from latdoc.analysis.compare import Comparison
from latdoc.analysis.gates import GateReport
from latdoc.report.costs import CostRow
from latdoc.store import RunInfo


@dataclass(frozen=True)
class RunComparison:
    """Two stored runs and their comparison, A first."""

    a: RunInfo
    b: RunInfo
    comparison: Comparison
    gates: GateReport | None = None
    """The ``--fail-if`` gates, B against A as its baseline, when any were given."""
    costs: tuple[CostRow, CostRow] | None = None
    """What each run's requests cost at the price it kept, A first."""

    @property
    def gates_failed(self) -> bool:
        """Some gate was given and B failed it."""
        return self.gates is not None and bool(self.gates.failed)
