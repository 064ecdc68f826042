"""``latdoc load --processes auto``: how many processes the sweep's busiest level needs,
from what a short calibration costs this one.

Before the sweep, this process sends ``CALIBRATION_STREAMS`` closed-loop streams (fewer
when the sweep's peak is smaller) for ``CALIBRATION_S`` and measures its own
:class:`~latdoc.features.load.analysis.ClientLoad`. The client's CPU grows with the
requests it handles, so the peak's share of a core is the calibration's times the
peak's request rate over the calibration's: the peak streams over the calibration's
(closed loop, where each stream keeps the pace the server allows), or the highest
asked rate over the calibration's achieved rate (open loop). The processes are that
share over ``CLIENT_CPU_TARGET``, at least one, at most this machine's cores. The
calibration's requests come out of the run's request budget (a tenth of it at most)
and are not levels of the sweep: what it measured is kept in the run's metadata.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from latdoc.analysis.policy import CLIENT_CPU_TARGET
from latdoc.features.load.analysis import ClientLoad, LevelWindow
from latdoc.features.load.send.sweep import LoadPlan, _Sweep
from latdoc.probe import run_sending
from latdoc.records import Sample
from latdoc.workload import Budget

CALIBRATION_STREAMS = 32
CALIBRATION_S = 2.0


@dataclass(frozen=True)
class AutoProcesses:
    """The processes chosen, and the measure they were chosen from."""

    processes: int
    streams: int
    seconds: float
    requests: int
    requests_per_s: float
    load: ClientLoad | None
    peak_share: float | None
    """The predicted share of a core the peak level would take from one process."""
    cores: int

    def document(self) -> dict[str, Any]:
        return {
            "processes": self.processes,
            "calibration": {
                "streams": self.streams,
                "seconds": self.seconds,
                "requests": self.requests,
                "requests_per_s": self.requests_per_s,
                "client": None if self.load is None else self.load.document(),
            },
            "peak_cpu_share": self.peak_share,
            "cores": self.cores,
        }

    def sentence(self) -> str:
        if self.load is None or self.peak_share is None:
            return (
                f"--processes auto: the calibration ({self.requests} requests) measured "
                "nothing to size from; the sweep runs from this process"
            )
        wanted = max(1, math.ceil(self.peak_share / CLIENT_CPU_TARGET))
        capped = (
            f"; {wanted} would hold it, more than this machine's {self.cores} cores "
            "(`--ray` spreads over more machines)"
            if wanted > self.processes
            else ""
        )
        return (
            f"--processes auto chose {self.processes}: {self.streams} calibration streams "
            f"took {self.load.cpu_share:.0%} of a core at {self.requests_per_s:.0f} "
            f"requests/s, so the busiest level would take about {self.peak_share:.0%} of "
            f"one, and each process is sized for {CLIENT_CPU_TARGET:.0%}{capped}"
        )


def choose_processes(plan: LoadPlan) -> AutoProcesses:
    """Calibrate from this process and choose the processes for ``plan``'s busiest level."""
    streams = max(1, min(CALIBRATION_STREAMS, plan.peak_streams))
    budget = Budget(max(1, plan.max_requests // 10), None, CALIBRATION_S * 4)
    samples: list[Sample] = []
    windows: list[LevelWindow] = []
    calibration = LoadPlan(
        endpoint=plan.endpoint, connection=plan.connection, concurrency=(streams,),
        duration_per_level=CALIBRATION_S, prompt_tokens=plan.prompt_tokens,
        max_tokens=plan.max_tokens, max_requests=budget.max_requests, seed=plan.seed,
    )  # fmt: skip

    async def run() -> None:
        sweep = _Sweep(calibration, budget, samples.append, windows.append, None, None)
        await sweep.closed(1, streams, CALIBRATION_S)

    run_sending(run())
    cores = os.cpu_count() or 1
    done = [s for s in samples if s.trace.ok]
    window = windows[0] if windows else None
    load = None if window is None else window.client
    rate = len(done) / window.seconds if window is not None else 0.0
    if load is None or not done or rate <= 0:
        return AutoProcesses(1, streams, CALIBRATION_S, len(samples), rate, load, None, cores)
    scale = plan.peak_streams / streams if plan.closed_loop else max(plan.rates) / rate
    peak_share = load.cpu_share * scale
    processes = min(cores, max(1, math.ceil(peak_share / CLIENT_CPU_TARGET)))
    return AutoProcesses(
        processes, streams, window.seconds if window else CALIBRATION_S, len(samples), rate,
        load, peak_share, cores,
    )  # fmt: skip
