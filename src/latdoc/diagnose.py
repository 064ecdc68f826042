"""The diagnosis pipeline: measure the three steps, attribute, advise.

``run_diagnosis`` sends (through :mod:`latdoc.steps`); ``build_diagnosis`` is pure
and can be re-run later on stored samples, which is what ``latdoc report`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from latdoc.advice.remedies import with_remedies
from latdoc.analysis.attribution import RunContext, diagnose
from latdoc.analysis.model import Diagnosis
from latdoc.steps import DiagnosisPlan, ProgressHook, SampleHook, StepsResult, run_steps
from latdoc.workload.budget import Budget
from latdoc.workload.sample import Sample


def build_diagnosis(samples: Sequence[Sample], context: RunContext) -> Diagnosis:
    """Verdict, findings and ranked remedies for one run's samples."""
    return with_remedies(diagnose(samples, context), context)


async def run_diagnosis(
    plan: DiagnosisPlan,
    *,
    budget: Budget | None = None,
    on_sample: SampleHook | None = None,
    on_progress: ProgressHook | None = None,
) -> StepsResult:
    """Measure the network, input-length and load steps within the plan's budget."""
    return await run_steps(plan, budget, on_sample, on_progress)
