"""Any two stored runs compared like with like."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from latdoc.analysis.compare import compare_samples
from latdoc.analysis.gates import Gate, check_gates
from latdoc.errors import UsageError
from latdoc.features.compare.analysis import RunComparison
from latdoc.model import price_from_dict, summarise_costs
from latdoc.records import Sample
from latdoc.report.costs import CostRow
from latdoc.store import RunInfo, Store


def compare_runs(
    store: Store,
    run_a: str,
    run_b: str,
    *,
    allow_different: bool = False,
    seed: int = 0,
    gates: Sequence[Gate] = (),
) -> RunComparison:
    """Compare two stored runs (ids or unique prefixes) like with like, sending nothing;
    check ``gates`` with A as the baseline.

    Runs of different endpoints or models are refused unless ``allow_different``.
    """
    info_a, samples_a, _ = store.load_run(run_a)
    info_b, samples_b, _ = store.load_run(run_b)
    if info_a.run_id == info_b.run_id:
        raise UsageError(f"both runs are {info_a.run_id}: compare two different runs")
    if not allow_different:
        for what, x, y in (
            ("endpoint", info_a.endpoint, info_b.endpoint),
            ("model", info_a.model, info_b.model),
        ):
            if x != y:
                raise UsageError(
                    f"the runs measured different {what}s ({x} and {y}); "
                    "pass --allow-different to compare them anyway"
                )
    comparison = compare_samples(samples_a, samples_b, seed=seed)
    if not comparison.groups:
        raise UsageError(
            f"runs {info_a.run_id} and {info_b.run_id} have no requests sent under the same "
            "conditions (step, prompt length, concurrency) that both measured"
        )
    report = check_gates(samples_a, samples_b, gates) if gates else None
    costs = (_cost_row("A", info_a, samples_a), _cost_row("B", info_b, samples_b))
    return RunComparison(info_a, info_b, comparison, report, costs)


def _cost_row(name: str, info: RunInfo, samples: Sequence[Sample]) -> CostRow:
    """What a run's requests cost at the price it kept (none: a run without a price)."""
    traces = [s.trace for s in samples]
    price = price_from_dict(info.meta.get("price")) if isinstance(info.meta, Mapping) else None
    cost = None if price is None else summarise_costs(traces, price)
    return CostRow(name, cost, sum(1 for t in traces if t.ok))
