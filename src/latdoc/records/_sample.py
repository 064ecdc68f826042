"""Why a request was sent: the :class:`Step` of the method (or the probe, the
experiment, the traffic) that sent it, the :class:`Sample` that labels a trace with it
and the conditions it was sent under, and the :class:`StepNote` that says what a step
left out.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from latdoc.records._trace import RequestTrace


class Step(enum.StrEnum):
    """Why a request was sent: a step of the method, a probe, or an arm of an experiment."""

    CALIBRATION = "calibration"
    """Two short requests that learn how the endpoint counts prompt tokens."""
    NETWORK = "network"
    """Step 1: cold and warm requests at a short prompt."""
    LENGTH = "length"
    """Step 2: the same request at growing prompt lengths."""
    LOAD = "load"
    """Step 3: repeats one after another, then several at once; in ``latdoc load``, one
    level of a closed-loop sweep (``concurrency`` is the level)."""
    ARRIVALS = "arrivals"
    """``latdoc load --rate``: one level of an open-loop sweep, requests arriving at random
    (``concurrency`` is the level's number, from 1; its rate is in the run's meta)."""
    RUN = "run"
    """The run as a whole (used by notes, never by a sample)."""
    PROBE = "probe"
    """``latdoc probe``: the same request repeated."""
    EXPERIMENT = "experiment"
    """``latdoc verify``: one arm of an A/B experiment."""
    TRAFFIC = "traffic"
    """``latdoc.instrument``: a request the application itself made, timed as it passed."""
    WATCH = "watch"
    """``latdoc watch``: a tick's cold short, warm short or long request, on a schedule."""
    SUMMARY = "summary"
    """``latdoc verify --remedy conversation``: a summary the model wrote for a strategy
    (its time and tokens are that strategy's cost)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One trace of a diagnosis run, labelled with the step and conditions that produced it."""

    step: Step
    trace: RequestTrace
    target_prompt_tokens: int | None = None
    """The prompt length asked for (the trace holds what the endpoint counted)."""
    concurrency: int = 1
    """How many requests were in flight together when this one was sent."""
    cold: bool = False
    """Sent on a new connection on purpose (network step)."""
    index: int = 0
    """Order within the run."""
    loop_lag_ms: float | None = None
    """How late the measuring client's event loop ran at worst during this request."""
    worker: int | None = None
    """Which load worker sent it (a local process or a Ray actor, from 0); ``None`` when
    the measuring process sent it itself."""


@dataclass(frozen=True, slots=True)
class StepNote:
    """Something a step had to leave out or could not measure, said in the report."""

    step: Step
    text: str
