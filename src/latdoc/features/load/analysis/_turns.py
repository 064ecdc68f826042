"""The user's turns of a conversation or an agent trace replayed: what the user waited.

A user turn of an agent is several requests: the model answers with a tool call, the
tool runs, the model is asked again, until it answers in text. The user waits from the
turn's first request to the first token of its answer: the model's tool-calling
requests and the tools' time are in that wait. It is read from the turn's own traces
(each keeps its monotonic start), by the sample indexes the replay recorded for the
turn (:data:`USER_TURNS_META` in the run's meta), so a stored run gives the same
figures again. An SLO's TTFT objective is judged on that wait and its TPOT objective
on the answer's (:meth:`~latdoc.features.load.analysis.Slo.met_by`).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from latdoc.features.load.analysis._level import Percentiles, Slo, percentiles
from latdoc.records import RequestTrace, Sample

__all__ = [
    "MAX_TURN_ROWS",
    "USER_TURNS_META",
    "TurnRow",
    "UserTurns",
    "turn_values",
    "user_turns",
]

USER_TURNS_META = "user_turns"
"""The run's meta key: one ``[turn, [index, ...]]`` a user turn, its place in its session
(from 0) and the indexes of its samples in the order they were sent."""
MAX_TURN_ROWS = 8
"""The table shows this many turns of a session; the row of all turns holds the rest."""
_NS_PER_MS = 1_000_000


@dataclass(frozen=True, slots=True)
class TurnRow:
    """The user turns at one place in their sessions (``turn``, from 0), or all of them
    (``turn`` ``None``)."""

    turn: int | None
    turns: int
    """User turns counted (their answer came)."""
    failed: int
    """User turns whose requests failed before an answer."""
    calls: float
    """Requests a turn took, on average (its tool-calling requests and its answer)."""
    wait_ms: Percentiles | None
    """From the turn's first request to its answer's first token."""
    answer_ttft_ms: float | None
    """The answer request's own time to first token, p50."""
    answer_tpot_ms: float | None
    """The answer's time per output token, p50."""
    cached_tokens: float | None
    """The answer's prompt tokens the endpoint served from its prefix cache, p50 of
    those that said; ``None`` where none did."""
    met: int | None
    """Turns meeting the SLO (the wait against its TTFT objective); ``None`` without one."""


@dataclass(frozen=True, slots=True)
class UserTurns:
    """The replay's user turns: by their place in a session, then all together."""

    rows: tuple[TurnRow, ...]
    overall: TurnRow

    @property
    def cached(self) -> bool:
        """Some answer said how many of its prompt tokens the endpoint had cached."""
        return self.overall.cached_tokens is not None


def user_turns(
    spans: object, samples: Sequence[Sample], slo: Slo | None = None
) -> UserTurns | None:
    """The user turns ``spans`` (the meta's :data:`USER_TURNS_META`) mark among
    ``samples``; ``None`` where it marks none (an entry that is not one is left out)."""
    by_index = {s.index: s.trace for s in samples}
    rows: dict[int, list[list[RequestTrace]]] = defaultdict(list)
    for entry in spans if isinstance(spans, list) else ():
        if not (isinstance(entry, list) and len(entry) == 2):
            continue
        turn, indexes = entry
        if not _count(turn) or not isinstance(indexes, list) or not all(map(_count, indexes)):
            continue
        traces = [by_index[i] for i in indexes if i in by_index]
        if traces:
            rows[turn].append(traces)
    if not rows:
        return None
    slo = slo if slo is not None and slo.any else None
    every = [t for turn in sorted(rows) for t in rows[turn]]
    return UserTurns(
        tuple(_row(turn, rows[turn], slo) for turn in sorted(rows)[:MAX_TURN_ROWS]),
        _row(None, every, slo),
    )


def turn_values(turns: Sequence[Sequence[RequestTrace]]) -> dict[str, list[float]]:
    """What the users of ``turns`` (each a user turn's requests, in the order sent) met,
    by metric, over the turns whose answer came: ``ttft`` the wait to the answer's first
    token, ``tpot`` the answer's time per output token, ``e2e`` the wait to its end."""
    values: dict[str, list[float]] = {"ttft": [], "tpot": [], "e2e": []}
    for traces in turns:
        wait = _wait_ms(traces)
        if wait is None:
            continue
        answer = traces[-1]
        values["ttft"].append(wait)
        if answer.tpot_ms is not None:
            values["tpot"].append(answer.tpot_ms)
        if answer.done_ns is not None:
            values["e2e"].append((answer.t0_ns + answer.done_ns - traces[0].t0_ns) / _NS_PER_MS)
    return values


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _wait_ms(traces: Sequence[RequestTrace]) -> float | None:
    answer = traces[-1]
    if not answer.ok or answer.first_token_ns is None:
        return None
    return (answer.t0_ns + answer.first_token_ns - traces[0].t0_ns) / _NS_PER_MS


def _row(turn: int | None, turns: list[list[RequestTrace]], slo: Slo | None) -> TurnRow:
    waits = [(w, t[-1]) for t in turns if (w := _wait_ms(t)) is not None]
    ttfts = [a.ttft_ms for _, a in waits if a.ttft_ms is not None]
    tpots = [a.tpot_ms for _, a in waits if a.tpot_ms is not None]
    cached = [a.cached_prompt_tokens for _, a in waits if a.cached_prompt_tokens is not None]
    return TurnRow(
        turn,
        len(waits),
        len(turns) - len(waits),
        statistics.fmean(len(t) for t in turns),
        percentiles([w for w, _ in waits]),
        statistics.median(ttfts) if ttfts else None,
        statistics.median(tpots) if tpots else None,
        statistics.median(cached) if cached else None,
        None if slo is None else sum(1 for w, a in waits if slo.met_by(a, ttft_ms=w)),
    )
