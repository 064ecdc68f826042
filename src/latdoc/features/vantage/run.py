"""The network step, or a whole diagnosis, measured from other places: Ray nodes that
carry a ``vantage:NAME`` custom resource.

:func:`probe_here` and :func:`diagnose_here` run on the vantage node itself (Ray
ships them there, :func:`~latdoc.pipeline.run_at_vantages`) and send back the samples and
that node's host facts. The driver then keeps one run per vantage in its own
store, labelled ``meta["vantage"]``, and compares them side by side
(:mod:`latdoc.features.vantage.analysis`). This module imports no Ray.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from latdoc.features.vantage.analysis import VantageComparison, compare_vantages, vantage_row
from latdoc.features.vantage.render import ShownVantages
from latdoc.model import Priorities, Scenario
from latdoc.pipeline import (
    build_diagnosis,
    host_meta,
    measure_steps,
    probe_options,
    run_at_vantages,
    run_context,
    run_meta,
    send_probes,
)
from latdoc.records import RequestTrace, Sample, Step, StepNote
from latdoc.store import DIAGNOSE_KIND, PROBE_KIND, Store, diagnosis_to_record
from latdoc.workload import DiagnosisPlan, ProbePlan


@dataclass(frozen=True)
class FromVantage:
    """What one vantage measured, and the facts of the host it measured from."""

    name: str
    host: dict[str, Any]
    samples: tuple[Sample, ...]
    notes: tuple[StepNote, ...] = ()


def probe_here(plan: ProbePlan, name: str) -> FromVantage:
    """Send ``plan``'s probes from this host (on the vantage node)."""
    samples: list[Sample] = []
    send_probes(plan, samples.append)
    return FromVantage(name, host_meta(), tuple(samples))


def diagnose_here(plan: DiagnosisPlan, name: str) -> FromVantage:
    """Measure every step of a diagnosis from this host (on the vantage node)."""
    samples: list[Sample] = []
    result = asyncio.run(measure_steps(plan, on_sample=samples.append))
    return FromVantage(name, host_meta(), tuple(samples), tuple(result.notes))


@dataclass(frozen=True)
class VantageRuns:
    """One stored run per vantage, and their comparison."""

    run_ids: dict[str, str]
    comparison: VantageComparison
    store_path: str

    @property
    def every_failed(self) -> bool:
        """Every request sent from some vantage failed."""
        return any(r.requests and r.failed == r.requests for r in self.comparison.rows)

    def shown(self) -> ShownVantages:
        """The vantages as the commands show them."""
        return ShownVantages(self.comparison, self.run_ids, self.store_path)


def probe_vantages(
    plan: ProbePlan, *, ray: str, vantages: Sequence[str], store: Store
) -> VantageRuns:
    """Probe ``plan``'s endpoint from each vantage at once; keep a ``probe`` run of each."""
    found = run_at_vantages(ray, vantages, probe_here, plan)
    options = probe_options(plan)
    run_ids = {}
    for one in found:
        meta = {**one.host, "options": options, "vantage": one.name, "ray": ray}
        run_ids[one.name] = _keep(store, plan.endpoint.base_url, plan.endpoint.model, one, meta)
        store.finish_run(run_ids[one.name], status="done", diagnosis=None)
    return VantageRuns(run_ids, _compare(found, run_ids), store.path)


def diagnose_vantages(
    plan: DiagnosisPlan,
    *,
    ray: str,
    vantages: Sequence[str],
    store: Store,
    scenario: Scenario,
    priorities: Priorities | None = None,
) -> VantageRuns:
    """Diagnose ``plan``'s endpoint from each vantage at once; keep a diagnosis of each (the
    pool is sized for the plan's concurrency, as the load step sends it; its remedies
    ranked for ``priorities``, else for ``scenario``'s)."""
    found = run_at_vantages(ray, vantages, diagnose_here, plan)
    endpoint, model = plan.endpoint.base_url, plan.endpoint.model
    run_ids = {}
    for one in found:
        meta = {
            **run_meta(plan, plan.concurrency, priorities=priorities),
            **one.host,
            "vantage": one.name,
            "ray": ray,
        }
        run_id = _keep(store, endpoint, model, one, meta, scenario=scenario, kind=DIAGNOSE_KIND)
        context = run_context(run_id, endpoint, model, scenario, meta, one.notes)
        document = diagnosis_to_record(build_diagnosis(one.samples, context))
        store.finish_run(run_id, status="done", notes=one.notes, diagnosis=document)
        run_ids[one.name] = run_id
    return VantageRuns(run_ids, _compare(found, run_ids), store.path)


def _keep(
    store: Store,
    endpoint: str,
    model: str,
    one: FromVantage,
    meta: dict[str, Any],
    *,
    scenario: str = "",
    kind: str = PROBE_KIND,
) -> str:
    run_id = store.new_run(endpoint=endpoint, model=model, scenario=scenario, meta=meta, kind=kind)
    store.add_samples(run_id, one.samples)
    return run_id


def _compare(found: Sequence[FromVantage], run_ids: dict[str, str]) -> VantageComparison:
    def measured(one: FromVantage) -> list[RequestTrace]:
        # The network step's requests, or a probe's: what each vantage sent alike.
        steps = (Step.NETWORK, Step.PROBE)
        return [s.trace for s in one.samples if s.step in steps]

    rows = [
        vantage_row(
            one.name,
            measured(one),
            run_id=run_ids[one.name],
            host=one.host.get("host"),
        )
        for one in found
    ]
    return compare_vantages(rows)
