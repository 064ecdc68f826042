"""A series of probes as ``latdoc probe`` runs it: calibrate if asked, then repeat.

This loop sends requests and hands each trace to a callback; it computes no
statistics and prints nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from latdoc.errors import UsageError
from latdoc.i18n import N_
from latdoc.probe import ConnectionOptions, Endpoint
from latdoc.records import RequestTrace
from latdoc.workload._calibration import TokenCalibration, calibrate
from latdoc.workload._prompts import make_prompt

DEFAULT_PROMPT = "Hello, please briefly introduce yourself."


@dataclass(frozen=True)
class ProbePlan:
    """What ``latdoc probe`` sends: the prompt (text or a token length), the output
    length, how many times, on reused or new connections."""

    endpoint: Endpoint
    connection: ConnectionOptions = field(default_factory=ConnectionOptions)
    prompt: str | None = None
    prompt_tokens: int | None = None
    max_tokens: int = 64
    repeat: int = 1
    reuse_connections: bool = True
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.prompt is not None and self.prompt_tokens is not None:
            raise UsageError(N_("give either a prompt or a prompt length in tokens, not both"))
        if self.prompt_tokens is not None and self.prompt_tokens < 1:
            raise UsageError(N_("--prompt-tokens must be at least 1"))
        if self.max_tokens < 1:
            raise UsageError(N_("--max-tokens must be at least 1"))
        if self.repeat < 1:
            raise UsageError(N_("--repeat must be at least 1"))


@dataclass(frozen=True)
class ProbeRun:
    """The traces of a series of probes, and the calibration (with its own traces) when
    a prompt length was asked for."""

    traces: tuple[RequestTrace, ...]
    calibration: TokenCalibration | None = None
    calibration_traces: tuple[RequestTrace, ...] = ()


async def run_probe(
    plan: ProbePlan,
    on_trace: Callable[[int, RequestTrace], None] | None = None,
    *,
    on_calibration: Callable[[RequestTrace], None] | None = None,
    on_attempt: Callable[[RequestTrace], None] | None = None,
) -> ProbeRun:
    """Send ``plan.repeat`` requests one after another; the first is always cold.

    ``on_trace`` hears each probe as it finishes, ``on_calibration`` each of the
    calibration requests a ``prompt_tokens`` plan sends first, ``on_attempt`` each
    first attempt of a probe that was sent again (its ``trace.attempt`` is 2).
    """

    def resend(first: RequestTrace) -> bool:
        if on_attempt is not None:
            on_attempt(first)
        return True

    rng = random.Random(plan.seed)
    conn = plan.connection
    traces: list[RequestTrace] = []
    calibration: TokenCalibration | None = None
    calibration_traces: list[RequestTrace] = []
    if plan.prompt_tokens is not None:
        async with conn.session(plan.endpoint) as cal_session:
            calibration, cal = await calibrate(cal_session, rng, near_tokens=plan.prompt_tokens)
            calibration_traces.extend(cal)
        if on_calibration is not None:
            for trace in cal:
                on_calibration(trace)
    async with conn.session(
        plan.endpoint, reuse=plan.reuse_connections, on_resend=resend
    ) as session:
        for index in range(plan.repeat):
            if calibration is not None and plan.prompt_tokens is not None:
                prompt = make_prompt(calibration.words_for(plan.prompt_tokens), rng)
            else:
                prompt = plan.prompt or DEFAULT_PROMPT
            trace = await session.request(prompt, plan.max_tokens)
            traces.append(trace)
            if on_trace is not None:
                on_trace(index, trace)
    return ProbeRun(tuple(traces), calibration, tuple(calibration_traces))
