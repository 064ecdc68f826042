"""A load sweep read level by level: latency percentiles, throughput, the knee, Little's law.

Each level of ``latdoc load`` is a :class:`LevelWindow` (what the client meant to
send and when) and the samples sent in it. The level's window runs from its start
to the moment it stopped sending: throughput counts the requests finished in it,
the achieved arrival rate those sent in it; requests that finish after it still
count in the latency percentiles.

- The **knee** is the first level whose server-side TTFT p50 (from the request
  reaching the wire, so the client's own delay cannot make one) is at least
  ``KNEE_RATIO`` times that of the lowest level and ``KNEE_MIN_RISE_MS`` above it
  (:func:`~latdoc.analysis.policy.queues_under_load`, which the queueing rule reads
  too): requests start to wait for the server. Traces without the wire mark fall
  back to TTFT from the request's start.
- The **throughput plateau** is the first level whose requests/s grows less than
  ``PLATEAU_GROWTH`` over the previous level's: more load buys no more work.
- **Little's law**: over a window, the mean number of requests in flight equals
  throughput × mean latency. Measured from the same traces the two sides agree up to
  edge effects, so the check holds the in-flight mean against the level's *target*:
  its concurrency (closed loop), or its asked rate × mean latency (open loop). A gap
  beyond ``LITTLE_TOLERANCE`` means the client did not hold the load it meant to,
  or the window was too short for its latency.
- **Goodput**: the requests per second (and the share) meeting every SLO.
- **The client's own limit** (:class:`ClientLoad`): the CPU the sending process used,
  how late its event loop and its kernel-stamp reader ran. Past ``CLIENT_CPU_SHARE`` of
  a core, or ``CLIENT_LAG_MS`` of lag at the p99, the client shaped the level's numbers
  (its TTFT, inter-token gaps and throughput carry its own waiting), and
  :func:`processes_for` says how many processes would hold the load.

A level cut short (an interrupted sweep, or a level the error budget stopped) is
kept and marked ``partial``; the knee and the plateau are found among the other levels.

The client's own limit is in :mod:`._client`, one level's numbers in :mod:`._level`, the
sweep across its levels in :mod:`._sweep`, an SLO's objectives read at a level (for
``--find-max``) in :mod:`._objectives`, and the user turns of a replayed conversation or
agent (what the user waited, tool calls in it) in :mod:`._turns`.
"""

from latdoc.analysis.policy import LITTLE_TOLERANCE
from latdoc.features.load.analysis._client import ClientLoad, busiest, processes_for
from latdoc.features.load.analysis._findings import findings, level_name
from latdoc.features.load.analysis._found import MAX_ROUNDS, OVER_SATURATION, FindMax, Probe
from latdoc.features.load.analysis._level import (
    SUSTAINED_LATE_MS,
    SUSTAINED_SHARE,
    Failure,
    LevelStats,
    LevelWindow,
    LittlesLaw,
    Percentiles,
    Slo,
    failures_by_phase,
    level_stats,
    percentiles,
)
from latdoc.features.load.analysis._objectives import (
    Objective,
    Reading,
    objective,
    parse_slo,
    read_level,
    read_values,
)
from latdoc.features.load.analysis._sweep import (
    LoadAnalysis,
    analyse_load,
    find_knee,
    find_plateau,
    find_tail_knee,
    knee_base,
    windows_kept,
)
from latdoc.features.load.analysis._turns import (
    USER_TURNS_META,
    TurnRow,
    UserTurns,
    turn_values,
    user_turns,
)

__all__ = [
    "LITTLE_TOLERANCE",
    "MAX_ROUNDS",
    "OVER_SATURATION",
    "SUSTAINED_LATE_MS",
    "SUSTAINED_SHARE",
    "USER_TURNS_META",
    "ClientLoad",
    "Failure",
    "FindMax",
    "LevelStats",
    "LevelWindow",
    "LittlesLaw",
    "LoadAnalysis",
    "Objective",
    "Percentiles",
    "Probe",
    "Reading",
    "Slo",
    "TurnRow",
    "UserTurns",
    "analyse_load",
    "busiest",
    "failures_by_phase",
    "find_knee",
    "find_plateau",
    "find_tail_knee",
    "findings",
    "knee_base",
    "level_name",
    "level_stats",
    "objective",
    "parse_slo",
    "percentiles",
    "processes_for",
    "read_level",
    "read_values",
    "turn_values",
    "user_turns",
    "windows_kept",
]
