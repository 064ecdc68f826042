"""The three measurement steps of a diagnosis, within a budget, each stopping when its
decision is settled.

1. **network**: one cold request and warm ones on the same connection, at the short
   prompt: DNS, TCP, TLS, send, server wait; over TLS, one more cold request offering the
   first connection's TLS session (the resumed handshake beside the full one). Three
   more cold requests follow only when
   one does not settle the network rules (:func:`network_unsettled`): a lookup,
   round trip or handshake near its rule's threshold, or a setup large enough that
   what keep-alive saves is worth its pairs.
2. **input length**: the same request at growing prompt lengths of exact token
   counts (each prompt unique), one request each (a failed one asked once more), the
   rule's reference length first;
   the short prompt is the curve's first length, measured by the requests sent alone
   in the other steps. The reference is asked again when the first answer does not
   settle the length rule (:func:`length_unsettled`). The longest length is chosen
   from the TTFTs measured so the run fits its time and token budget.
3. **load**: the plan's ``concurrency`` at once (does TTFT rise with load?), first, as
   it alone shows a queue; then a few same-length requests one after another (the
   dispersion also reads the network step's), as many as the budget affords.

Each request is reserved in the :class:`Budget` before it is sent and handed to
``on_sample`` as soon as it finishes, so an interrupted run keeps every finished
trace (:mod:`._sending`). This module sends and labels; it computes no verdict and
prints nothing. The lengths, repeats and margins it sends by are the plan's
(:mod:`._diagnosis_plan`).
"""

from __future__ import annotations

import asyncio
import math

from latdoc.analysis.kinds.input_length import LONG_REFERENCE_TOKENS
from latdoc.i18n import N_, Message
from latdoc.model import DEFAULT_CONCURRENCY
from latdoc.probe import LoopLagMonitor, ProbeSession
from latdoc.records import RequestTrace, Sample, Step
from latdoc.workload._budget import Budget, budget_for
from latdoc.workload._calibration import (
    ASSUMED,
    CalibrationFailed,
    calibrate,
    calibration_words,
    cannot_answer_note,
    prompt_cost,
)
from latdoc.workload._diagnosis_plan import (
    CALIBRATION_NEAR_TOKENS,
    EXTRA_COLD,
    LENGTH_ORDER,
    LENGTH_TIME_SHARE,
    REFERENCE_REPEATS,
    RESUMED_TLS,
    SAFETY,
    SEQUENTIAL_REPEATS,
    SHORT_TOKENS,
    WARM_REQUESTS,
    DiagnosisPlan,
)
from latdoc.workload._diagnosis_plan import LENGTHS as LENGTHS
from latdoc.workload._diagnosis_plan import planned_requests as planned_requests
from latdoc.workload._diagnosis_plan import planned_tokens as planned_tokens
from latdoc.workload._sending import (
    CannotAnswer,
    ProgressHook,
    SampleHook,
    StepSender,
    StepsResult,
)
from latdoc.workload._settle import length_unsettled, network_unsettled


class _Runner(StepSender):
    """The steps, in the order :func:`run_steps` sends them, each on the sender's
    session and budget."""

    async def calibrate(self) -> None:
        words = calibration_words(CALIBRATION_NEAR_TOKENS)
        costs = [prompt_cost(ASSUMED, w) for w in words]
        if not self.budget.can_afford(max(costs), 1, count=2):
            self.note(
                Step.CALIBRATION,
                N_("no budget to calibrate prompt lengths; 1 token per word assumed"),
            )
            return
        reservations = [r for c in costs if (r := self.budget.reserve(c, 1)) is not None]
        self.progress(Step.CALIBRATION, 0, 2)
        async with self.session() as s:
            try:
                calibration, traces = await calibrate(
                    s, self.rng, near_tokens=CALIBRATION_NEAR_TOKENS
                )
            except CalibrationFailed as exc:
                calibration, traces = ASSUMED, exc.traces
                self.note(
                    Step.CALIBRATION, Message("{error}; 1 token per word assumed", error=str(exc))
                )
        for r, t in zip(reservations, traces, strict=False):
            self.budget.settle(r, t)
            self.keep(Sample(Step.CALIBRATION, t, t.prompt_tokens))
        if not calibration.measured and traces:
            self.note(
                Step.CALIBRATION, N_("the endpoint reports no usage; 1 token per word assumed")
            )
        self.calibration = calibration
        self.result.calibration = calibration
        self.progress(Step.CALIBRATION, 2, 2)

    async def network(self) -> None:
        resumed = RESUMED_TLS if self.plan.endpoint.is_tls else 0
        total = 1 + WARM_REQUESTS + resumed + EXTRA_COLD
        done = 0
        self.progress(Step.NETWORK, done, total)
        traces: list[RequestTrace] = []
        async with self.session() as s:
            for i in range(1 + WARM_REQUESTS):
                if i > 0 and self.budget.seconds_left < self._short_ttft_s() * SAFETY:
                    self.note(Step.NETWORK, N_("time budget reached during the network step"))
                    return
                trace = await self.send(s, Step.NETWORK, SHORT_TOKENS, cold=i == 0)
                if trace is None:
                    self.note(Step.NETWORK, N_("budget reached during the network step"))
                    return
                traces.append(trace)
                done += 1
                self.progress(Step.NETWORK, done, total)
            # Over TLS, a second cold connection offering the first one's session: the
            # resumed handshake beside the full one, and whether the server resumes.
            if (
                self.plan.endpoint.is_tls
                and traces[0].ok
                and await self.send(s, Step.NETWORK, SHORT_TOKENS, cold=True, resume_tls=True)
            ):
                done += 1
                self.progress(Step.NETWORK, done, total)
        why = network_unsettled(traces[0], traces[1:])
        if why is None:
            self.note(
                Step.NETWORK,
                Message(
                    "{n} requests: the first cold request settled the network rules, so no more "
                    "cold requests were sent",
                    n=done,
                ),
            )
            self.progress(Step.NETWORK, total, total)
            return
        for _ in range(EXTRA_COLD):
            async with self.session(reuse=False) as s:
                if await self.send(s, Step.NETWORK, SHORT_TOKENS, cold=True) is None:
                    self.note(Step.NETWORK, N_("budget reached before the extra cold requests"))
                    return
            done += 1
            self.progress(Step.NETWORK, done, total)
        self.note(
            Step.NETWORK,
            Message(
                "{n} requests: {extra} more cold ones, as {why}",
                n=done,
                extra=EXTRA_COLD,
                why=Message.of(why),
            ),
        )

    def _short_ttft_s(self) -> float:
        ttfts = [
            s.trace.ttft_ms / 1000
            for s in self.result.samples
            if s.step == Step.NETWORK and s.trace.ttft_ms is not None
        ]
        return sorted(ttfts)[len(ttfts) // 2] if ttfts else 1.0

    async def length(self, time_for_step: float) -> None:
        lengths = [
            n
            for n in LENGTH_ORDER
            if self.plan.context_window is None or n <= self.plan.context_window
        ]
        if len(lengths) < len(LENGTH_ORDER):
            self.note(
                Step.LENGTH,
                Message(
                    "lengths above the {n}-token context window left out",
                    n=self.plan.context_window,
                ),
            )
        out = self.plan.max_tokens
        decode_s = self._decode_s()
        short_s = self._short_ttft_s()
        points: list[tuple[int, float]] = [(SHORT_TOKENS, short_s)]
        step_deadline = self.budget.seconds_left - time_for_step
        total = len(lengths)
        async with self.session() as s:
            for i, n in enumerate(lengths):
                predicted = _extrapolate(points, n) + decode_s
                left = self.budget.seconds_left - step_deadline
                must_have = i == 0 and predicted * SAFETY <= self.budget.seconds_left
                if not must_have and predicted * SAFETY > left:
                    self.note(
                        Step.LENGTH,
                        Message(
                            "{n} tokens left out: predicted {predicted:.1f} s per request, "
                            "{left:.1f} s of the time budget left",
                            n=n,
                            predicted=predicted,
                            left=max(0.0, left),
                        ),
                    )
                    break
                go_on, ttft = await self._length_request(s, n, out)
                if go_on and ttft is None:
                    # A failed request tells nothing of the length: it is asked once more.
                    go_on, ttft = await self._length_request(s, n, out)
                if not go_on:
                    return
                if ttft is None:
                    continue
                points.append((n, ttft))
                self.progress(Step.LENGTH, i + 1, total)
                if n == LONG_REFERENCE_TOKENS and length_unsettled(1000 * short_s, 1000 * ttft):
                    again = predicted * SAFETY <= self.budget.seconds_left - step_deadline
                    for _ in range(REFERENCE_REPEATS if again else 0):
                        if not (await self._length_request(s, n, out))[0]:
                            return
                    self.note(
                        Step.LENGTH,
                        Message(
                            "{n} tokens asked {times} times: its first TTFT was near the length "
                            "rule's threshold",
                            n=n,
                            times=1 + REFERENCE_REPEATS if again else 1,
                        ),
                    )

    async def _length_request(self, s: ProbeSession, n: int, out: int) -> tuple[bool, float | None]:
        """One request of ``n`` prompt tokens: whether the step goes on (not when the budget
        is reached or the length rejected), and the request's TTFT in seconds."""
        if not self.budget.can_afford(self.cost(n), out):
            self.note(
                Step.LENGTH,
                Message(
                    "{n} tokens left out: {caps} reached", n=n, caps=Message.of(self.budget.caps)
                ),
            )
            return False, None
        trace = await self.send(s, Step.LENGTH, n)
        if trace is None:
            self.note(
                Step.LENGTH,
                Message("{n} tokens: {caps} reached", n=n, caps=Message.of(self.budget.caps)),
            )
            return False, None
        if trace.error is not None and trace.error.refused_as_sent:
            self.note(
                Step.LENGTH,
                Message(
                    "{n} tokens rejected by the endpoint: {error}", n=n, error=trace.error.message
                ),
            )
            return False, None
        return True, None if trace.ttft_ms is None else trace.ttft_ms / 1000

    def _decode_s(self) -> float:
        decodes = [
            (s.trace.total_ms - s.trace.ttft_ms) / 1000
            for s in self.result.samples
            if s.trace.total_ms is not None and s.trace.ttft_ms is not None
        ]
        return max(decodes) if decodes else 1.0

    async def load(self) -> None:
        """The burst first: it alone shows a queue, and the network step's requests are
        already a baseline sent alone; then the sequential repeats, as the budget allows."""
        wanted = self.plan.concurrency
        total = SEQUENTIAL_REPEATS + wanted
        self.progress(Step.LOAD, 0, total)
        per_request = self._short_ttft_s() + self._decode_s()
        done = await self._burst(wanted, per_request)
        self.progress(Step.LOAD, done, total)
        async with self.session() as s:
            for _ in range(SEQUENTIAL_REPEATS):
                if self.budget.seconds_left < per_request * SAFETY:
                    self.note(Step.LOAD, "time budget reached during the sequential repeats")
                    return
                if await self.send(s, Step.LOAD, SHORT_TOKENS) is None:
                    self.note(
                        Step.LOAD, f"{self.budget.caps} reached during the sequential repeats"
                    )
                    return
                done += 1
                self.progress(Step.LOAD, done, total)

    async def _burst(self, wanted: int, per_request: float) -> int:
        """``wanted`` requests at once (fewer when the budget affords fewer); how many."""
        # A server that serves them one by one takes a request's time per request: that is
        # allowed for up to the default's size; a larger batch is cut by the run's time
        # budget like any request, rather than left out whenever the server is slow.
        if self.budget.seconds_left < per_request * min(wanted, DEFAULT_CONCURRENCY) * SAFETY:
            self.note(Step.LOAD, "the concurrency probe left out: not enough time budget")
            return 0
        out = self.plan.max_tokens
        cost = self.cost(SHORT_TOKENS)
        at_once = wanted
        reservations = None
        while (
            at_once >= 2 and (reservations := self.budget.reserve_many(cost, out, at_once)) is None
        ):
            at_once -= 1
        if reservations is None:
            self.note(Step.LOAD, f"the concurrency probe left out: {self.budget.caps} reached")
            return 0
        if at_once < wanted:
            self.note(
                Step.LOAD,
                f"{at_once} requests at once instead of {wanted}: "
                f"the {self.budget.caps} affords no more",
            )
        async with self.session(max_connections=at_once) as s:
            prompts = [self.prompt(SHORT_TOKENS) for _ in range(at_once)]
            hook = self.resend_as(Step.LOAD, SHORT_TOKENS, at_once, cold=False)
            traces = await asyncio.gather(*(s.request(p, out, on_resend=hook) for p in prompts))
        for r, t in zip(reservations, traces, strict=True):
            self.budget.settle(r, t)
            self.keep(Sample(Step.LOAD, t, SHORT_TOKENS, at_once))
        return at_once


def _extrapolate(points: list[tuple[int, float]], n: int) -> float:
    """Linear extrapolation of TTFT (s) to ``n`` tokens from the two longest points."""
    pts = sorted(points)
    if len(pts) < 2:
        return pts[-1][1] * max(1.0, n / max(pts[-1][0], 1))
    (n1, t1), (n2, t2) = pts[-2], pts[-1]
    slope = max(0.0, (t2 - t1) / max(n2 - n1, 1))
    return t2 + slope * (n - n2)


async def run_steps(
    plan: DiagnosisPlan,
    budget: Budget | None = None,
    on_sample: SampleHook | None = None,
    on_progress: ProgressHook | None = None,
) -> StepsResult:
    """Calibrate, then the network, input-length and load steps, within the budget."""
    budget = budget or budget_for(plan)
    runner = _Runner(plan, budget, on_sample, on_progress)
    left = budget.seconds_left
    try:
        async with LoopLagMonitor() as lag, asyncio.timeout(None if math.isinf(left) else left):
            runner.lag = lag
            await runner.calibrate()
            await runner.network()
            await runner.length(max(0.0, budget.seconds_left) * LENGTH_TIME_SHARE)
            await runner.load()
    except TimeoutError:
        runner.note(Step.RUN, "the time budget ran out; the request in flight was abandoned")
    except CannotAnswer as stop:
        runner.note(Step.RUN, cannot_answer_note(stop.error))
    return runner.result
