"""How noisy this machine's timing is right now, so a timing test can widen its tolerance by it.

A test that asserts a measured effect (a TTFT, a saved prefill, a gap between chunks)
compares a wall-clock measurement with the time the lab planned. On a quiet machine the
two agree within a few percent; on a loaded one (a CI runner sharing its cores, a CPU hog
beside the suite) every wake-up and every slice of work can be late by a few
milliseconds, and a fixed tolerance fails for reasons that have nothing to do with
latdoc. So each such test measures the machine's own scheduling noise in the same run
and allows, on top of its quiet-machine tolerance, a few times that noise (or the spread
of its own samples, planned alike, if larger), never so much that an absent effect would
pass: :meth:`MachineNoise.bound_ms` caps every widened tolerance where the effect would
no longer show.

The noise is measured by :func:`scheduling_noise_ms`: rounds of a short nap and a slice
of pure-Python work, each timed by the wall clock and by the thread's CPU clock. What the
wall clock counts beyond the nap and the CPU time is time the round waited: a late
wake-up, or its work preempted by another process or thread. On a quiet machine that is
a small fraction of a millisecond; beside a CPU hog, milliseconds. The noise is the 90th
percentile of that wait over the rounds.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from latdoc.analysis.noticeable import MAD_TO_SIGMA

ROUNDS = 20
"""Timed rounds per noise measurement (about 60 ms on a quiet machine)."""
NAP_S = 0.001
WORK_LOOPS = 40_000
"""A slice of pure-Python work of about two milliseconds on one core."""
WIDEN = 3.0
"""How many noise units a measured effect may stray on top of its relative tolerance."""
MAX_SHARE = 0.5
"""The widened tolerance never exceeds this share of the effect, so a missing effect
(measured near zero) always fails."""


def _waited_ms() -> float:
    wall, cpu = time.perf_counter(), time.thread_time()
    time.sleep(NAP_S)
    total = 0
    for i in range(WORK_LOOPS):
        total += i
    waited = (time.perf_counter() - wall) - (time.thread_time() - cpu) - NAP_S
    return max(0.0, waited) * 1000


def scheduling_noise_ms(rounds: int = ROUNDS) -> float:
    """The machine's scheduling noise now, in ms: the 90th percentile over timed rounds
    of a nap and a slice of work of how long each waited beyond them."""
    waits = sorted(_waited_ms() for _ in range(rounds))
    return waits[min(len(waits) - 1, int(0.9 * len(waits)))]


def run_delay_ms(pid: int) -> float:
    """How long process ``pid``'s threads have waited, in all, for a core while ready to
    run, in ms (the second field of Linux's ``/proc/PID/task/TID/schedstat``); 0 where
    the kernel keeps no such account. The difference over a timed part is how long the
    other work on the machine held the process back during it."""
    total_ns = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total_ns += int(stat.read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total_ns / 1e6


@dataclass
class HeldBack:
    """How long this process was held back during a block, in ms: its threads' wait for
    a core (:func:`run_delay_ms`) and its garbage collector's pauses. Set when the block
    ends."""

    wait_ms: float = 0.0
    gc_ms: float = 0.0

    @property
    def ms(self) -> float:
        return self.wait_ms + self.gc_ms


@contextmanager
def held_back(*others: int) -> Iterator[HeldBack]:
    """Measure what held this process back while the block ran. A test whose client and
    lab share the process (the ``lab`` fixture's server runs in a thread) reads it as
    how far either side's marks can move: a pause lengthens an interval the client
    measures, or shortens it, when the lab, late, writes the events it owes at once.
    ``others`` are more processes whose wait for a core counts too (a lab process)."""
    held, started = HeldBack(), [0]

    def on_gc(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter_ns()
        elif started[0]:
            held.gc_ms += (time.perf_counter_ns() - started[0]) / 1e6

    pids = (os.getpid(), *others)
    before = sum(run_delay_ms(pid) for pid in pids)
    gc.callbacks.append(on_gc)
    try:
        yield held
    finally:
        gc.callbacks.remove(on_gc)
        held.wait_ms = sum(run_delay_ms(pid) for pid in pids) - before


def spread_ms(values: Iterable[float]) -> float:
    """A robust standard deviation (scaled MAD) of measured values, in ms."""
    values = list(values)
    centre = statistics.median(values)
    return MAD_TO_SIGMA * statistics.median(abs(v - centre) for v in values)


class MachineNoise:
    """The noise measured when a test started, remeasured on demand; :meth:`ms` is the
    largest seen, so a burst of load during the timed part widens the tolerance."""

    def __init__(self) -> None:
        self.seen_ms = [scheduling_noise_ms()]

    def ms(self) -> float:
        self.seen_ms.append(scheduling_noise_ms())
        return max(self.seen_ms)

    def bound_ms(self, base_ms: float, cap_ms: float, *, extra_ms: float = 0.0) -> float:
        """``base_ms`` (the tolerance on a quiet machine) widened by :data:`WIDEN` times
        the noise (or the noise the test measured of its own samples, ``extra_ms``, if
        larger), never beyond ``cap_ms`` (where the effect would no longer show)."""
        return min(base_ms + WIDEN * max(self.ms(), extra_ms), cap_ms)

    def tolerance_ms(
        self, planned_ms: float, rel: float, *, extra_ms: float = 0.0, cap: float = MAX_SHARE
    ) -> float:
        """``rel`` of the planned effect, widened by the noise, capped at ``cap`` of it."""
        return self.bound_ms(rel * abs(planned_ms), cap * abs(planned_ms), extra_ms=extra_ms)

    def assert_near(
        self,
        measured_ms: float,
        planned_ms: float,
        base_ms: float,
        cap_ms: float,
        *,
        extra_ms: float = 0.0,
        late_ms: float = 0.0,
    ) -> None:
        """``measured_ms`` lies within :meth:`bound_ms` of ``planned_ms``, and may stray
        by ``late_ms`` more: what the test measured held its own process back
        (:func:`held_back`), which moves the marks of what it timed by as much."""
        tolerance = self.bound_ms(base_ms, cap_ms, extra_ms=extra_ms)
        low, high = planned_ms - tolerance - late_ms, planned_ms + tolerance + late_ms
        assert low <= measured_ms <= high, (
            f"measured {measured_ms:.1f} ms, planned {planned_ms:.1f} ms, allowed "
            f"{low:.1f}–{high:.1f} ms (noise {max(self.seen_ms):.1f} ms, samples' spread "
            f"{extra_ms:.1f} ms, process held back {late_ms:.1f} ms)"
        )

    def assert_effect(
        self, measured_ms: float, planned_ms: float, rel: float, *, extra_ms: float = 0.0
    ) -> None:
        """``measured_ms`` lies within ``rel`` of ``planned_ms``, widened by the noise and
        capped at :data:`MAX_SHARE` of it."""
        self.assert_near(
            measured_ms,
            planned_ms,
            rel * abs(planned_ms),
            MAX_SHARE * abs(planned_ms),
            extra_ms=extra_ms,
        )

    def no_effect_bound_ms(self, floor_ms: float) -> float:
        """How far from zero a difference may be when the knob is off: ``floor_ms`` on a
        quiet machine, widened by the noise."""
        return floor_ms + WIDEN * self.ms()
