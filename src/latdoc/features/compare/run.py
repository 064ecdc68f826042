"""Any two stored runs compared like with like."""

from __future__ import annotations

from collections.abc import Sequence

from latdoc.analysis.compare import compare_samples
from latdoc.analysis.gates import Gate, check_gates
from latdoc.errors import UsageError
from latdoc.features.compare.analysis import RunComparison
from latdoc.i18n import N_, Message
from latdoc.report.costs import CostRow
from latdoc.store import Store


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
        raise UsageError(
            Message("both runs are {run_id}: compare two different runs", run_id=info_a.run_id)
        )
    if not allow_different:
        for what, x, y in (
            (N_("endpoint"), info_a.endpoint, info_b.endpoint),
            (N_("model"), info_a.model, info_b.model),
        ):
            if x != y:
                raise UsageError(
                    Message(
                        "the runs measured different {what}s ({x} and {y}); pass "
                        "--allow-different to compare them anyway",
                        what=Message.of(what),
                        x=x,
                        y=y,
                    )
                )
    comparison = compare_samples(samples_a, samples_b, seed=seed)
    if not comparison.groups:
        raise UsageError(
            Message(
                "runs {run_id} and {other} have no requests sent under the same conditions "
                "(step, prompt length, concurrency) that both measured",
                run_id=info_a.run_id,
                other=info_b.run_id,
            )
        )
    report = check_gates(samples_a, samples_b, gates) if gates else None
    costs = (
        CostRow.of("A", [s.trace for s in samples_a], info_a.price),
        CostRow.of("B", [s.trace for s in samples_b], info_b.price),
    )
    return RunComparison(info_a, info_b, comparison, report, costs)
