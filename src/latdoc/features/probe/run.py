"""Probes kept as a run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from latdoc.pipeline import host_meta, probe_options, send_probes
from latdoc.records import RequestTrace
from latdoc.store import PROBE_KIND, Store
from latdoc.workload import ProbePlan, ProbeRun


@dataclass(frozen=True)
class StoredProbe:
    """A series of probes and the run that keeps it."""

    run_id: str
    result: ProbeRun
    store_path: str

    @property
    def any_failed(self) -> bool:
        """Some probe of the series failed (the calibration's requests aside)."""
        return any(t.error is not None for t in self.result.traces)


def probe_endpoint(
    plan: ProbePlan,
    *,
    store: Store,
    on_trace: Callable[[int, RequestTrace], None] | None = None,
) -> StoredProbe:
    """Send ``plan``'s probes and keep every trace in ``store`` as it finishes.

    The run can be compared with another (:func:`latdoc.compare_runs`); Ctrl-C keeps the
    traces that finished and marks the run ``interrupted`` before it propagates.
    """
    meta = {**host_meta(), "options": probe_options(plan)}
    run_id = store.new_run(
        endpoint=plan.endpoint.base_url,
        model=plan.endpoint.model,
        scenario="",
        meta=meta,
        kind=PROBE_KIND,
    )
    try:
        result = send_probes(plan, lambda s: store.add_sample(run_id, s), on_trace)
    except BaseException:
        store.finish_run(run_id, status="interrupted", diagnosis=None)
        raise
    store.finish_run(run_id, status="done", diagnosis=None)
    return StoredProbe(run_id, result, store.path)
