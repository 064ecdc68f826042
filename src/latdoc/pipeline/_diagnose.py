"""The diagnosis core the features share: the three steps measured, a run's samples
diagnosed, and what a run records about itself and reads back as its context.

A diagnosis run (:mod:`latdoc.features.diagnose`) and a vantage point's diagnosis
(:mod:`latdoc.features.vantage`) both measure and diagnose through these.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from latdoc.advice.remedies import with_remedies
from latdoc.advice.system import with_system
from latdoc.analysis.attribution import diagnose
from latdoc.model import (
    Diagnosis,
    Preset,
    Priorities,
    RunContext,
    Scenario,
    parse_priorities,
    price_from_dict,
    price_to_dict,
    summarise_costs,
)
from latdoc.pipeline._host import host_facts_from_meta, host_meta
from latdoc.pipeline._server_metrics import metrics_from_meta
from latdoc.probe import providers
from latdoc.records import Sample, StepNote
from latdoc.reference import ReferenceProfile, reference_from_record, reference_to_record
from latdoc.workload import (
    Budget,
    DiagnosisPlan,
    ProgressHook,
    SampleHook,
    StepsResult,
    run_steps,
)


def build_diagnosis(samples: Sequence[Sample], context: RunContext) -> Diagnosis:
    """Verdict, findings, ranked remedies, the failing host settings that matter for the
    verdict, and what every request sent cost, for one run's samples."""
    diagnosis = with_system(with_remedies(diagnose(samples, context), context), context)
    if context.price is None:
        return diagnosis
    return replace(diagnosis, cost=summarise_costs((s.trace for s in samples), context.price))


async def measure_steps(
    plan: DiagnosisPlan,
    *,
    budget: Budget | None = None,
    on_sample: SampleHook | None = None,
    on_progress: ProgressHook | None = None,
) -> StepsResult:
    """Measure the network, input-length and load steps within the plan's budget; it keeps
    and diagnoses nothing (:func:`latdoc.diagnose_endpoint` does)."""
    return await run_steps(plan, budget, on_sample, on_progress)


async def run_diagnosis(
    plan: DiagnosisPlan,
    *,
    budget: Budget | None = None,
    on_sample: SampleHook | None = None,
    on_progress: ProgressHook | None = None,
) -> StepsResult:
    """Deprecated name of :func:`measure_steps`, which it calls: it only measures."""
    warnings.warn(
        "run_diagnosis only measures and is now measure_steps; the old name goes in the "
        "next release",
        DeprecationWarning,
        stacklevel=2,
    )
    return await measure_steps(plan, budget=budget, on_sample=on_sample, on_progress=on_progress)


def run_context(
    run_id: str,
    endpoint: str,
    model: str,
    scenario: Scenario,
    meta: Mapping[str, Any],
    notes: Sequence[StepNote],
) -> RunContext:
    """What the analysis needs to know beyond the samples, from a run's metadata (the
    priorities the user gave, kept as their ``--priorities`` text)."""
    metrics, metrics_source = metrics_from_meta(meta)
    priorities = meta.get("priorities")
    return RunContext(
        run_id=run_id,
        endpoint=endpoint,
        model=model,
        scenario=scenario,
        priorities=None if priorities is None else parse_priorities(str(priorities)),
        concurrency=int(meta.get("concurrency", 1)),
        prompt_tokens=None if meta.get("prompt_tokens") is None else int(meta["prompt_tokens"]),
        cpu_count=int(meta.get("cpu_count", 1)),
        tcp_settings={str(k): int(v) for k, v in dict(meta.get("tcp_settings", {})).items()},
        notes=tuple(notes),
        host=host_facts_from_meta(meta),
        server_metrics=metrics,
        server_metrics_source=metrics_source,
        price=price_from_dict(meta.get("price")),
        preset=preset_of(meta.get("provider")),
        reference=None
        if meta.get("reference") is None
        else reference_from_record(meta["reference"]),
    )


def preset_of(name: object) -> Preset | None:
    """The preset a run recorded it sent with, as the advice reads it: its name, and the
    effort its thinking switch takes where that is its only lever (from the preset's
    quirks, so the advice proposes what ``verify`` accepts); ``None`` for no preset, or
    one this version does not know."""
    spec = providers.find(name) if isinstance(name, str) else None
    if spec is None:
        return None
    switch = spec.quirks.thinking
    return Preset(spec.name, None if switch is None else switch.effort)


def run_meta(
    plan: DiagnosisPlan,
    concurrency: int,
    prompt_tokens: int | None = None,
    priorities: Priorities | None = None,
    reference: ReferenceProfile | None = None,
) -> dict[str, Any]:
    """What a run records about itself: versions, the client host, the options, the
    user's typical request (its concurrency and prompt tokens) the verdict is for, the
    priorities the user ranks remedies by (None: the scenario's), the ``--provider``
    preset it sent with (None: none), and the user's reference of healthy (None: the
    profile latdoc ships)."""
    return {
        **host_meta(),
        "concurrency": concurrency,
        "prompt_tokens": prompt_tokens,
        "price": None if plan.price is None else price_to_dict(plan.price),
        "provider": None if plan.endpoint.provider is None else plan.endpoint.provider.name,
        "priorities": None if priorities is None else priorities.spec(),
        "reference": None if reference is None else reference_to_record(reference),
        "options": {
            "max_requests": plan.max_requests,
            "token_budget": plan.token_budget,
            "max_cost": plan.max_cost,
            "max_seconds": plan.max_seconds,
            "max_tokens": plan.max_tokens,
            "context_window": plan.context_window,
            "http2": plan.connection.http2,
        },
    }
