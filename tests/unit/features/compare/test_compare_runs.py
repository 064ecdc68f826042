"""Two stored runs compared like with like, sending nothing: what is refused, the gates
held against A, and what the command shows of the runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from latdoc import Sample, Step, Store, UsageError, compare_runs
from latdoc.analysis.gates import parse_gates
from latdoc.features.compare import ShownComparison, describe
from report_samples import ENDPOINT, make_trace, run_samples


def _keep(store: Store, endpoint: str = ENDPOINT, *, label: str | None = None) -> str:
    meta = {} if label is None else {"arm_label": label}
    run_id = store.new_run(endpoint=endpoint, model="m", scenario="", meta=meta, kind="probe")
    store.add_samples(run_id, run_samples(failed=False))
    store.finish_run(run_id, status="done", diagnosis=None)
    return run_id


def test_two_runs_of_one_endpoint_are_compared_group_by_group(tmp_path: Path) -> None:
    with Store(str(tmp_path / "s.db")) as store:
        a, b = _keep(store), _keep(store, label="pooled")
        result = compare_runs(store, a, b)
    assert (result.a.run_id, result.b.run_id) == (a, b)
    assert result.comparison.groups
    assert result.gates is None and not result.gates_failed
    shown = ShownComparison(result)
    assert shown.document()["a"]["run_id"] == a
    assert shown.document()["b"]["label"] == "pooled"
    assert describe(result.b).startswith(f"pooled; probe run {b} of m at {ENDPOINT}, ")


def test_a_run_is_not_compared_with_itself_nor_with_another_endpoint(tmp_path: Path) -> None:
    with Store(str(tmp_path / "s.db")) as store:
        a, b = _keep(store), _keep(store, "https://other.example.com/v1")
        with pytest.raises(UsageError, match="compare two different runs"):
            compare_runs(store, a, a)
        with pytest.raises(UsageError, match="--allow-different"):
            compare_runs(store, a, b)
        assert compare_runs(store, a, b, allow_different=True).comparison.groups


def _load_run(store: Store, wait_ms: float) -> str:
    run_id = store.new_run(endpoint=ENDPOINT, model="m", scenario="", meta={}, kind="probe")
    traces = [make_trace(dns=None, connect=None, tls=None, wait=wait_ms + i) for i in range(12)]
    store.add_samples(run_id, [Sample(Step.LOAD, t, index=i) for i, t in enumerate(traces)])
    store.finish_run(run_id, status="done", diagnosis=None)
    return run_id


def test_the_gates_are_held_against_a(tmp_path: Path) -> None:
    gates = parse_gates("ttft_p50 > +10%")
    with Store(str(tmp_path / "s.db")) as store:
        a, same, slower = _load_run(store, 400), _load_run(store, 400), _load_run(store, 900)
        held = compare_runs(store, a, same, gates=gates)
        failed = compare_runs(store, a, slower, gates=gates)
    assert held.gates is not None and held.gates.rows and not held.gates_failed
    assert failed.gates_failed
