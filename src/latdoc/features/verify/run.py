"""One remedy measured as an A/B experiment on the endpoint, both arms kept as runs.

Before the arms run, the endpoint's token count is calibrated, and the remedy's
precondition is checked on the endpoint itself (HTTP/2 offered, an answer that
ends by itself, the other endpoint or model answering). A remedy the endpoint
cannot show is ``not_applicable`` with the reason, never a made-up gain. After
them: both arms compared like with like, and the verdict on the remedy's
headline metric.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from secrets import token_hex
from typing import Any

from latdoc.analysis.compare import (
    METRICS,
    Comparison,
    MetricComparison,
    compare_arms,
    compare_samples,
    experiment_verdict,
    ratio_precision,
)
from latdoc.features.verify.remedies import (
    HEADLINE,
    VerifyPlan,
    VerifyRemedy,
    build_arms,
    short_question,
)
from latdoc.features.verify.send import Arm, ExperimentResult, run_experiment
from latdoc.pipeline import host_meta
from latdoc.probe import ProbeSession
from latdoc.records import Sample, Step, StepNote
from latdoc.store import Store
from latdoc.workload import (
    ASSUMED,
    Budget,
    CalibrationFailed,
    TokenCalibration,
    calibrate,
    calibration_words,
    prompt_cost,
)

NOT_APPLICABLE = "not_applicable"
CALIBRATION_NEAR_TOKENS = 256
CUT_ANSWERS_ALLOWED = 0.1
"""Above this share of B's answers cut at the limit, max-tokens changed the answer."""


@dataclass(frozen=True)
class VerifyResult:
    """What the experiment found, and where its arms are kept."""

    remedy: VerifyRemedy
    verdict: str
    """``better``, ``worse``, ``no_difference`` or ``not_applicable``."""
    reason: str | None = None
    """Why the remedy is not applicable here, in words."""
    headline: MetricComparison | None = None
    """The remedy's headline metric, A against B, tested alone."""
    comparison: Comparison | None = None
    """Every metric, Holm-adjusted over all of them."""
    labels: tuple[str, str] = ("", "")
    run_ids: tuple[str, str] | None = None
    notes: tuple[StepNote, ...] = ()
    stopped_because: str | None = None
    cached_tokens_b: int | None = None
    """The median prompt tokens the server reported cached in arm B (prompt-cache)."""
    store_path: str = ""

    @property
    def gain_ms(self) -> float | None:
        """What B saves on the headline metric, per request: A − B (median or mean)."""
        return None if self.headline is None else -self.headline.difference_ms

    @property
    def gain_interval_ms(self) -> tuple[float, float] | None:
        ci = None if self.headline is None else self.headline.difference_ci_ms
        return None if ci is None else (-ci[1], -ci[0])


ProgressHook = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ArmRun:
    """One arm of an experiment, as its run is opened in the store."""

    name: str
    label: str
    endpoint: str
    model: str
    options: Mapping[str, Any]


def open_verify_runs(store: Store, remedy: str, arms: Sequence[ArmRun]) -> dict[str, str]:
    """A ``verify`` run per arm, tied by one experiment id; run ids by arm name."""
    experiment = token_hex(4)
    return {
        arm.name: store.new_run(
            endpoint=arm.endpoint,
            model=arm.model,
            scenario="",
            kind="verify",
            meta={
                **host_meta(),
                "experiment": experiment,
                "remedy": remedy,
                "arm": arm.name,
                "arm_label": arm.label,
                "options": dict(arm.options),
            },
        )
        for arm in arms
    }


def verify_remedy(
    plan: VerifyPlan,
    *,
    store: Store,
    on_progress: ProgressHook | None = None,
    on_sample: Callable[[str, Sample], None] | None = None,
) -> VerifyResult:
    """Run ``plan``'s experiment; Ctrl-C stops the sending, not the comparison."""
    state = _State(plan, store, on_progress, on_sample)
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
    store: Store
    on_progress: ProgressHook | None
    on_sample: Callable[[str, Sample], None] | None
    notes: list[StepNote] = field(default_factory=list)
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {"A": [], "B": []})
    arms: tuple[Arm, Arm] | None = None
    run_ids: dict[str, str] = field(default_factory=dict)
    stopped_because: str | None = None

    async def run(self) -> VerifyResult:
        plan = self.plan
        budget = Budget(plan.max_requests, plan.token_budget, plan.max_seconds)
        rng = random.Random(plan.seed)
        self._progress("calibration", 0, 1)
        calibration, answer = await self._prepare(budget, rng)
        if isinstance(answer, str):
            return VerifyResult(plan.remedy, NOT_APPLICABLE, reason=answer, notes=tuple(self.notes))
        self.arms = build_arms(plan, calibration, answer_tokens=answer)
        self._open_runs()
        result = await _experiment(self, budget)
        self.stopped_because = result.stopped_because
        self.notes.extend(result.notes)
        return self.finish("done")

    async def _prepare(
        self, budget: Budget, rng: random.Random
    ) -> tuple[TokenCalibration, int | str | None]:
        """Calibrate, and check the remedy's precondition; a string is why it cannot apply."""
        plan = self.plan
        for words in calibration_words(CALIBRATION_NEAR_TOKENS):
            budget.reserve(prompt_cost(ASSUMED, words), 1)
        async with plan.connection.session(plan.endpoint) as session:
            try:
                calibration, _ = await calibrate(session, rng, near_tokens=CALIBRATION_NEAR_TOKENS)
            except CalibrationFailed as exc:
                if (error := exc.cannot_answer) is not None:
                    return ASSUMED, f"the endpoint cannot answer: {error}; {error.cannot_answer}"
                self.notes.append(StepNote(Step.CALIBRATION, f"{exc}; 1 token per word assumed"))
                calibration = ASSUMED
            if plan.remedy is VerifyRemedy.MAX_TOKENS:
                return calibration, await _answer_length(session, plan, rng)
        if plan.remedy is VerifyRemedy.HTTP2:
            return calibration, await _http2_offered(plan)
        if plan.remedy in (VerifyRemedy.ENDPOINT, VerifyRemedy.MODEL):
            arms = build_arms(plan, calibration)
            return calibration, await _answers(arms[1])
        return calibration, None

    def _open_runs(self) -> None:
        assert self.arms is not None
        runs = [
            ArmRun(
                arm.name,
                arm.label,
                arm.endpoint.base_url,
                arm.endpoint.model,
                _options(self.plan, arm),
            )
            for arm in self.arms
        ]
        self.run_ids.update(open_verify_runs(self.store, str(self.plan.remedy), runs))

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
            return VerifyResult(plan.remedy, NOT_APPLICABLE, reason="nothing was measured")
        a, b = self.samples["A"], self.samples["B"]
        labels = (self.arms[0].label, self.arms[1].label)
        run_ids = (self.run_ids["A"], self.run_ids["B"])
        key, statistic = HEADLINE[plan.remedy]
        label, read = next((lbl, r) for k, lbl, r in METRICS if k == key)
        headline = compare_arms(key, label, a, b, read, seed=plan.seed or 0, statistic=statistic)
        comparison = compare_samples(a, b, seed=plan.seed or 0)
        verdict, reason = experiment_verdict(headline), None
        cached = _median([s.trace.cached_prompt_tokens for s in b])
        if plan.remedy is VerifyRemedy.PROMPT_CACHE and not cached:
            verdict = NOT_APPLICABLE
            reason = (
                "the endpoint reported no cached prompt tokens for the stable prefix: it "
                "offers no prompt cache to this client, or does not say when it uses one"
            )
        if plan.remedy is VerifyRemedy.MAX_TOKENS:
            cut = [s for s in b if s.trace.ok and s.trace.finish_reason != "stop"]
            if b and len(cut) > CUT_ANSWERS_ALLOWED * len(b):
                verdict = NOT_APPLICABLE
                reason = (
                    f"{len(cut)} of {len(b)} answers in B were cut at the limit: the tight "
                    "max_tokens changed the answers, not only the limit"
                )
        if headline is None and reason is None:
            verdict = NOT_APPLICABLE
            reason = "fewer than two successful requests in an arm: nothing to compare"
        return VerifyResult(
            plan.remedy,
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
        )


async def _experiment(state: _State, budget: Budget) -> ExperimentResult:
    assert state.arms is not None
    plan = state.plan
    key, statistic = HEADLINE[plan.remedy]
    read = next(r for k, _, r in METRICS if k == key)

    def precise(a: Sequence[Sample], b: Sequence[Sample]) -> bool:
        return ratio_precision(a, b, read, statistic=statistic) <= plan.precision

    return await run_experiment(
        state.arms,
        budget,
        seed=plan.seed,
        should_stop=precise,
        on_sample=state.keep,
        on_progress=lambda done, total: state._progress("trials", done, total),
    )


async def _answer_length(session: ProbeSession, plan: VerifyPlan, rng: random.Random) -> int | str:
    """The natural length of an answer, or why there is none to measure."""
    trace = (await session.request(short_question(rng), plan.generous_max_tokens)).raise_for_error()
    if trace.finish_reason != "stop" or not trace.output_tokens:
        return (
            f"the answer did not end by itself within max_tokens={plan.generous_max_tokens} "
            f"(finish reason {trace.finish_reason or 'none'}): with an answer as long as the "
            "limit, only the limit could differ between the arms, so nothing can be verified"
        )
    return trace.output_tokens


async def _http2_offered(plan: VerifyPlan) -> int | str | None:
    connection = replace(plan.connection, http2=True)
    async with connection.session(plan.endpoint, max_connections=1) as session:
        trace = (await session.request("Hello", 1)).raise_for_error()
    if trace.http_version != "HTTP/2":
        return (
            f"the endpoint answered over {trace.http_version or 'HTTP/1.1'} when offered "
            "HTTP/2 (ALPN): it does not serve HTTP/2 to this client"
        )
    return None


async def _answers(arm: Arm) -> int | str | None:
    async with arm.session() as session:
        trace = await session.request("Hello", 1)
    if trace.error is not None:
        where = arm.endpoint.base_url
        return f"arm B ({arm.endpoint.model} at {where}) does not answer: {trace.error}"
    return None


def _median(values: Sequence[int | None]) -> float | None:
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    mid = len(known) // 2
    return float(known[mid]) if len(known) % 2 else (known[mid - 1] + known[mid]) / 2


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
