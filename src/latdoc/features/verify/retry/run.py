"""``latdoc verify --remedy retry``: no retries against the retry policy, on the endpoint's
own errors; both arms kept as runs, every attempt a sample (its index the trial's)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from latdoc.client import RetryPolicy
from latdoc.features.verify.remedies import VerifyPlan, build_arms
from latdoc.features.verify.retry.analysis import RetryComparison, TrialOutcome, compare_reliability
from latdoc.features.verify.retry.send import RetryTrial, run_retry_trials
from latdoc.features.verify.run import ArmRun, open_verify_runs
from latdoc.records import Sample, Step, StepNote
from latdoc.store import Store
from latdoc.workload import ASSUMED, Budget


@dataclass(frozen=True)
class RetryVerdict:
    """No retries against the retry policy: the comparison of their reliability, both
    arms' labels and runs, and the notes."""

    comparison: RetryComparison
    labels: tuple[str, str]
    run_ids: tuple[str, str]
    notes: tuple[StepNote, ...] = ()
    store_path: str = ""
    interrupted: bool = False


def verify_retry(
    plan: VerifyPlan,
    *,
    store: Store,
    policy: RetryPolicy | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> RetryVerdict:
    """``plan.trials`` logical requests per arm, A with no retries, B under ``policy``."""
    policy = policy or RetryPolicy()
    arms = build_arms(plan, ASSUMED)
    by_arm = open_verify_runs(
        store,
        "retry",
        [
            ArmRun(
                arm.name,
                arm.label,
                arm.endpoint.base_url,
                arm.endpoint.model,
                {"trials": plan.trials, "max_tokens": arm.max_tokens},
            )
            for arm in arms
        ],
    )
    run_ids = (by_arm["A"], by_arm["B"])
    trials: dict[str, list[RetryTrial]] = {"A": [], "B": []}
    notes: list[StepNote] = []

    def keep(trial: RetryTrial) -> None:
        trials[trial.arm].append(trial)
        for trace in trial.attempts:
            sample = Sample(Step.EXPERIMENT, trace, index=trial.index)
            store.add_sample(by_arm[trial.arm], sample)

    interrupted = False
    try:
        result = asyncio.run(
            run_retry_trials(
                arms,
                policy,
                Budget(plan.max_requests, plan.token_budget, plan.max_seconds),
                plan.trials,
                seed=plan.seed,
                on_trial=keep,
                on_progress=lambda done, total: (
                    on_progress("trials", done, total) if on_progress else None
                ),
            )
        )
        notes.extend(result.notes)
    except KeyboardInterrupt:
        interrupted = True
        notes.append(StepNote(Step.RUN, "interrupted by the user; compared what was measured"))
    for run_id in run_ids:
        store.finish_run(
            run_id, status="interrupted" if interrupted else "done", diagnosis=None, notes=notes
        )

    def outcomes(arm: str) -> list[TrialOutcome]:
        return [
            TrialOutcome(t.ok, t.end_to_end_ms, len(t.attempts), t.waited_s) for t in trials[arm]
        ]

    return RetryVerdict(
        comparison=compare_reliability(outcomes("A"), outcomes("B"), seed=plan.seed or 0),
        labels=(arms[0].label, arms[1].label),
        run_ids=run_ids,
        notes=tuple(notes),
        store_path=store.path,
        interrupted=interrupted,
    )
