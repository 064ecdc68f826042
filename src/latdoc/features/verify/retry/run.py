"""``latdoc verify --remedy retry``: no retries against the retry policy, on the endpoint's
own errors; both arms kept as runs, every attempt a sample (its index the trial's)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from latdoc.client import RetryPolicy
from latdoc.features.verify.arms import base_arm
from latdoc.features.verify.retry.analysis import RetryComparison, TrialOutcome, compare_reliability
from latdoc.features.verify.retry.render import render_retry, retry_to_dict
from latdoc.features.verify.retry.send import RetryOptions, RetryTrial, run_retry_trials
from latdoc.features.verify.runs import ArmRun, open_verify_runs
from latdoc.features.verify.send import Arm
from latdoc.records import Sample, Step, StepNote
from latdoc.store import Store
from latdoc.workload import ASSUMED, ProgressHook, TokenCalibration, budget_for

if TYPE_CHECKING:
    from rich.console import RenderableType

    from latdoc.features.verify.arms import Plan


NOT_APPLICABLE = "not_applicable"
NO_RETRIES = "no retries: the first failure is the application's"
UNDER_POLICY = (
    "latdoc.client.RetryPolicy(): connect errors and timeouts, 5xx, 529 and 429 "
    "retried with backoff, Retry-After honoured, other 4xx never"
)


def retry_arms(plan: Plan, options: RetryOptions, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    """The same short requests without retries (A) and under the policy (B)."""
    base = base_arm(plan, calibration)
    return (
        replace(base, label=NO_RETRIES, warmup_trials=0),
        replace(base, name="B", label=UNDER_POLICY, warmup_trials=0),
    )


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
    reason: str | None = None
    """Why the experiment could not apply: its first request failed as every request to
    the endpoint would."""

    @property
    def verdict(self) -> str:
        """The comparison's verdict, or ``not_applicable`` when there is a reason."""
        return NOT_APPLICABLE if self.reason is not None else self.comparison.verdict

    @property
    def not_applicable(self) -> bool:
        return self.verdict == NOT_APPLICABLE

    @property
    def gates_failed(self) -> bool:
        """No gates are checked on this experiment."""
        return False

    @property
    def page_kind(self) -> str:
        return "report"

    def document(self) -> dict[str, Any]:
        document = retry_to_dict(self.comparison, labels=self.labels, run_ids=self.run_ids)
        document["verdict"] = self.verdict
        document["reason"] = self.reason
        if self.reason is not None:
            document["summary"] = f"Verdict: not applicable — {self.reason}"
        document["notes"] = [{"step": str(n.step), "text": n.text} for n in self.notes]
        return document

    def shown(self) -> tuple[RenderableType, ...]:
        """Its table, then its notes."""
        return (self.renderable(), *(f"  Note: {note.text}" for note in self.notes))

    def renderable(self) -> RenderableType:
        return render_retry(self.comparison, labels=self.labels, reason=self.reason)

    def page(self) -> None:
        return None

    def kept(self) -> str:
        a, b = self.run_ids
        return f"Runs {a} (A) and {b} (B) kept in {self.store_path}."


def verify_retry(
    plan: Plan,
    *,
    store: Store,
    policy: RetryPolicy | None = None,
    on_progress: ProgressHook | None = None,
) -> RetryVerdict:
    """``trials`` logical requests per arm (the plan's options), A with no retries, B under
    ``policy``."""
    policy = policy or RetryPolicy()
    options = plan.options_as(RetryOptions)
    arms = retry_arms(plan, options, ASSUMED)
    by_arm = open_verify_runs(
        store,
        "retry",
        [
            ArmRun(
                arm.name,
                arm.label,
                arm.endpoint.base_url,
                arm.endpoint.model,
                {"trials": options.trials, "max_tokens": arm.max_tokens},
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
    reason = None
    try:
        result = asyncio.run(
            run_retry_trials(
                arms,
                policy,
                budget_for(plan),
                options.trials,
                seed=plan.seed,
                on_trial=keep,
                on_progress=lambda done, total: (
                    on_progress("trials", done, total) if on_progress else None
                ),
            )
        )
        notes.extend(result.notes)
        if (error := result.cannot_answer) is not None:
            reason = f"the endpoint cannot answer: {error}; {error.cannot_answer}"
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
        reason=reason,
    )
