"""One remedy measured as an experiment on the endpoint, its runs kept: as an A/B
experiment here, or by the experiment's own runner (a conversation, retries).

The experiment (:mod:`~latdoc.features.verify.experiments`) says what is done
around its arms. Before them, the endpoint's token count is calibrated, and the
experiment's precondition is checked on the endpoint itself (HTTP/2 offered, an
answer that ends by itself, the other endpoint or model answering). A remedy the
endpoint cannot show is ``not_applicable`` with the reason, never a made-up gain.
The user's checks (``--check``) are held in the budget before the arms and sent
through both after them. Then: both arms compared like with like, the verdict on the
experiment's headline metric, its judgement of B's answers, the checks, which can only
take from the verdict (:func:`~latdoc.features.verify.analysis.weigh_checks`), and the
plan's gates checked on B's runs as kept against A's, the baseline.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from latdoc.analysis.compare import METRICS, ratio_precision
from latdoc.analysis.gates import GateReport, check_gates
from latdoc.errors import UsageError
from latdoc.features.verify.analysis import (
    NOT_APPLICABLE,
    cached_prompt_tokens,
    judge_arms,
    weigh_checks,
)
from latdoc.features.verify.checks import Answer, Held, hold_checks, judge_checks, send_checks
from latdoc.features.verify.experiments import Before, Experiment, Outcome
from latdoc.features.verify.plan import VerifyPlan
from latdoc.features.verify.render import VerifyResult
from latdoc.features.verify.runs import ArmRun, open_verify_runs
from latdoc.features.verify.send import Arm, ExperimentResult, run_experiment
from latdoc.i18n import Message
from latdoc.pricing import find_price
from latdoc.records import Sample, Step, StepNote
from latdoc.report.costs import CostRow
from latdoc.store import Store
from latdoc.workload import (
    ASSUMED,
    Budget,
    CalibrationFailed,
    ProgressHook,
    TokenCalibration,
    budget_for,
    calibrate,
    calibration_words,
    prompt_cost,
)

CALIBRATION_NEAR_TOKENS = 256


def verify_remedy(
    plan: VerifyPlan,
    *,
    store: Store,
    on_progress: ProgressHook | None = None,
    on_sample: Callable[[str, Sample], None] | None = None,
) -> VerifyResult | Outcome:
    """Run ``plan``'s experiment and keep its runs in ``store``: as two arms, A/B trials
    compared like with like and the plan's gates checked on B against A (a
    :class:`VerifyResult`), or by the experiment's own runner (a conversation, retries),
    whose outcome is its own. Ctrl-C stops the sending, not the comparison."""
    spec = plan.remedy
    if spec.runner is not None:
        return spec.runner(plan, store=store, on_progress=on_progress)
    state = _State(plan, spec, store, on_progress, on_sample)
    try:
        return asyncio.run(state.run())
    except KeyboardInterrupt:
        state.notes.append(
            StepNote(Step.RUN, "interrupted by the user; compared what was measured")
        )
        return state.finish("interrupted")


@dataclass
class _State:
    plan: VerifyPlan
    spec: Experiment[Any]
    store: Store
    on_progress: ProgressHook | None
    on_sample: Callable[[str, Sample], None] | None
    notes: list[StepNote] = field(default_factory=list)
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {"A": [], "B": []})
    arms: tuple[Arm, Arm] | None = None
    run_ids: dict[str, str] = field(default_factory=dict)
    stopped_because: str | None = None
    answers: dict[str, dict[str, Answer]] = field(default_factory=dict)
    """The arms' answers to the user's checks, by arm, then by case id."""
    budget: Budget | None = None

    async def run(self) -> VerifyResult:
        plan = self.plan
        budget = self.budget = budget_for(plan)
        rng = random.Random(plan.seed)
        self._progress("calibration", 0, 1)
        calibration, options = await self._prepare(budget, rng)
        if isinstance(options, str):
            return VerifyResult(
                plan.remedy.name, NOT_APPLICABLE, reason=options, notes=tuple(self.notes)
            )
        a, b = self.spec.build_arms(plan, calibration, options)
        self.arms = (_priced(a, plan), _priced(b, plan))
        self._open_runs()
        held = self._hold_checks(budget, calibration)
        result = await _experiment(self, budget)
        self.stopped_because = result.stopped_because
        self.notes.extend(result.notes)
        if held:
            self.notes += await send_checks(
                held,
                self.arms,
                budget,
                self.answers,
                on_progress=lambda done, total: self._progress("checks", done, total),
            )
        return self.finish("done")

    def _hold_checks(self, budget: Budget, calibration: TokenCalibration) -> list[Held]:
        checks, arms = self.plan.checks, self.arms
        if checks is None or arms is None:
            return []
        held, notes = hold_checks(checks.cases, arms, budget, calibration, self.plan.max_tokens)
        self.notes.extend(notes)
        return held

    async def _prepare(self, budget: Budget, rng: random.Random) -> tuple[TokenCalibration, Any]:
        """Calibrate, and check the experiment's precondition on the endpoint: the options
        the arms are built from, or (a string) why the remedy cannot apply."""
        plan, spec = self.plan, self.spec
        options = spec.options_of(plan)
        if not spec.calibration and spec.precondition is None:
            return ASSUMED, options
        calibration = ASSUMED
        if spec.calibration:
            for words in calibration_words(CALIBRATION_NEAR_TOKENS):
                budget.reserve(prompt_cost(ASSUMED, words), 1)
        async with plan.connection.session(plan.endpoint) as session:
            if spec.calibration:
                try:
                    calibration, _ = await calibrate(
                        session, rng, near_tokens=CALIBRATION_NEAR_TOKENS
                    )
                except CalibrationFailed as exc:
                    if (error := exc.cannot_answer) is not None:
                        why = f"the endpoint cannot answer: {error}; {error.cannot_answer}"
                        return ASSUMED, why
                    note = f"{exc}; 1 token per word assumed"
                    self.notes.append(StepNote(Step.CALIBRATION, note))
            if spec.precondition is None:
                return calibration, options
            return calibration, await spec.precondition(
                Before(plan, calibration, session, rng), options
            )

    def _open_runs(self) -> None:
        assert self.arms is not None
        runs = [
            ArmRun(
                arm.name,
                arm.label,
                arm.endpoint.base_url,
                arm.endpoint.model,
                _options(self.plan, arm),
                arm.price,
            )
            for arm in self.arms
        ]
        self.run_ids.update(open_verify_runs(self.store, self.plan.remedy.name, runs))

    def keep(self, arm: str, sample: Sample) -> None:
        self.samples[arm].append(sample)
        self.store.add_sample(self.run_ids[arm], sample)
        if self.on_sample is not None:
            self.on_sample(arm, sample)

    def _progress(self, label: str, done: int, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(label, done, total)

    def finish(self, status: str) -> VerifyResult:
        plan = self.plan
        for run_id in self.run_ids.values():
            self.store.finish_run(run_id, status=status, diagnosis=None, notes=self.notes)
        if self.arms is None:
            return VerifyResult(plan.remedy.name, NOT_APPLICABLE, reason="nothing was measured")
        a, b = self.samples["A"], self.samples["B"]
        labels = (self.arms[0].label, self.arms[1].label)
        run_ids = (self.run_ids["A"], self.run_ids["B"])
        spec = self.spec
        verdict, comparison = judge_arms(
            a, b, metric=spec.headline, statistic=spec.statistic, seed=plan.seed or 0
        )
        headline, reason = comparison.primary, None
        cached = cached_prompt_tokens(b)
        if spec.judge is not None:
            reason = spec.judge(spec.options_of(plan), a, b)
            if reason is not None:
                verdict = NOT_APPLICABLE
        if headline is None and reason is None:
            verdict = NOT_APPLICABLE
            reason = "fewer than two successful requests in an arm: nothing to compare"
        checks = plan.checks
        report = None
        if checks is not None:
            report = judge_checks(checks.source, checks.cases, self.answers)
            if verdict != NOT_APPLICABLE:
                verdict = weigh_checks(verdict, report.quality)
        return VerifyResult(
            plan.remedy.name,
            verdict,
            reason=reason,
            headline=headline,
            comparison=comparison,
            labels=labels,
            run_ids=run_ids,
            notes=tuple(self.notes),
            stopped_because=self.stopped_because,
            cached_tokens_b=None if cached is None else round(cached),
            store_path=self.store.path,
            runs=(self.store.run_info(run_ids[0]), self.store.run_info(run_ids[1])),
            gates=self._gates(run_ids),
            interrupted=status == "interrupted",
            costs=(_cost_row(self.arms[0], a), _cost_row(self.arms[1], b)),
            model=plan.endpoint.model,
            checks=report,
            caveat=spec.caveat,
            spent=self._spent(),
        )

    def _spent(self) -> float | None:
        """Dollars the whole run spent, where every model it sent to has a price."""
        arms, budget = self.arms, self.budget
        if budget is None or arms is None or any(a.price is None for a in arms):
            return None
        return budget.spent

    def _gates(self, run_ids: tuple[str, str]) -> GateReport | None:
        """The plan's gates on B's samples as kept, against A's, the baseline."""
        if not self.plan.gates:
            return None
        _, baseline, _ = self.store.load_run(run_ids[0])
        _, remedy, _ = self.store.load_run(run_ids[1])
        return check_gates(baseline, remedy, self.plan.gates)


async def _experiment(state: _State, budget: Budget) -> ExperimentResult:
    assert state.arms is not None
    plan, spec = state.plan, state.spec
    read = next(r for k, _, r in METRICS if k == spec.headline)

    def precise(a: Sequence[Sample], b: Sequence[Sample]) -> bool:
        return ratio_precision(a, b, read, statistic=spec.statistic) <= plan.precision

    return await run_experiment(
        state.arms,
        budget,
        seed=plan.seed,
        should_stop=precise,
        on_sample=state.keep,
        on_progress=lambda done, total: state._progress("trials", done, total),
    )


def _options(plan: VerifyPlan, arm: Arm) -> dict[str, Any]:
    return {
        "max_tokens": arm.max_tokens,
        "concurrency": arm.concurrency,
        "max_connections": arm.max_connections,
        "reuse": arm.reuse,
        "http2": arm.connection.http2,
        "target_prompt_tokens": arm.target_prompt_tokens,
        "max_requests": plan.max_requests,
        "token_budget": plan.token_budget,
        "max_seconds": plan.max_seconds,
        "precision": plan.precision,
    }


def _priced(arm: Arm, plan: VerifyPlan) -> Arm:
    """``arm`` with its model's price: its own where the experiment gave it one (the
    user's ``--alt-price``), the plan's where it sends to the plan's model, else the
    price library's. A money cap needs a price for every model it sends to."""
    same = (arm.endpoint.model, arm.endpoint.base_url) == (
        plan.endpoint.model,
        plan.endpoint.base_url,
    )
    price = arm.price
    if price is None:
        price = plan.price if same else find_price(None, arm.endpoint.model, arm.endpoint.base_url)
    if price is None and plan.max_cost is not None:
        raise UsageError(
            Message(
                "--max-cost needs a price for every model the run sends to, and latdoc's price "
                "library has none for {model} (arm {arm})",
                model=arm.endpoint.model,
                arm=arm.name,
            )
        )
    return replace(arm, price=price)


def _cost_row(arm: Arm, samples: Sequence[Sample]) -> CostRow:
    """What an arm's kept requests cost at its model's price."""
    return CostRow.of(arm.name, [s.trace for s in samples], arm.price)
