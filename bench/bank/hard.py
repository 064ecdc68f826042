"""The hard slice of the truth bank, and which seeds may be tuned on: fixed before any
rule was changed against the counterfactual truth (:mod:`bank.counterfactual`).

A scenario is **hard** when any of these holds (:func:`is_hard`):

1. **Near a threshold**, below as well as above it (within ±:data:`NEAR` of it):
   - a cause's saving on the user's workload against the bank's materiality bar
     (the larger of its share of the typical request and its floor in ms), or
   - one of the model's true values against the reference profile's slow edge of
     healthy (``latdoc.reference``: the time per output token, 30.2 ms; the prefill's
     growth per 1K prompt tokens from the shortest prompt to the user's, 62 ms; the
     client's own delay, 100 ms; the DNS lookup, 200 ms; the TLS work beyond the
     handshake's two round trips, 60 ms: its 100 ms edge less two typical round trips;
     the uplink, 10 Mbit/s), or a threshold the method (MISSION.md) or a rule's
     documented bound gives it: the round trip (100 ms), the burst's TTFT over a
     request's alone (1.5×), the reasoning before the answer (100 ms), a stall
     (100 ms), the first token held by a hop (100 ms), the share of requests that
     fail (5%).
2. **Two causes alike in size**: the two largest material kinds' savings within
   :data:`ALIKE`× of each other.
3. **Heavy-tailed noise**: the scenario's server times have a Pareto tail.
4. **A quirk**: several tokens per streamed event, a rare error rate (below 5%),
   SSE keep-alive comments while the request is queued, busy periods that come in
   spells of seconds, drift of the server's speed within the run, or decode that
   slows with the streams in flight.

The thresholds in 1 are the profile's edges (a definition both sides read) and bounds
written out here from MISSION.md and the rules' documents, never imported from
:mod:`latdoc.analysis`: the slice must not move when a rule does.

**Seeds.** The seeds below are the only ones any rule change or fit was tuned or
checked on; the figures a closing note gives as the result come from
:data:`EVALUATION_SEED`, which no change was tuned on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from bank.counterfactual import PROFILE, Counterfactual, bar_ms
from bank.scenario import TLS_WORK_MS, Scenario, burst_queue_ms

NEAR = 0.30
"""How near a threshold, as a share of it, makes a scenario hard (both sides)."""
ALIKE = 2.0
"""Two material kinds whose savings are within this factor of each other are alike."""

THRESHOLDS: Mapping[str, float] = {
    "dns_ms": 200.0,
    "tls_extra_ms": PROFILE.tls_work_edge_ms - TLS_WORK_MS,
    "rtt_ms": 100.0,
    "uplink_mbit_s": PROFILE.edge("upload_mbit_s"),
    "prefill_ms_per_1k": PROFILE.edge("prefill_ms_per_1k"),
    "burst_ratio": 1.5,
    "tpot_ms": PROFILE.edge("tpot_ms"),
    "think_ms": 100.0,
    "stall_ms": 100.0,
    "held_ms": 100.0,
    "client_delay_ms": PROFILE.edge("client_delay_ms"),
    "error_share": 0.05,
}
"""The method's and the rules' documented bounds, by the model quantity they bound."""

QUIRKS = (
    "multi_token_events",
    "rare_errors",
    "keepalive_comments",
    "busy_spells",
    "drift",
    "batch_slowdown",
)
"""The quirks that make a scenario hard whatever its sizes."""
HEALTHY_QUIRKS = frozenset({"multi_token_events", "rare_errors", "keepalive_comments"})
"""The quirks a healthy endpoint has that must not be named a kind of slow."""

TUNING_SEEDS = (1, 2, 3, 4, 5, 7, 11, 17, 20261203)
"""Seeds of ``draw_many`` that rules, bars and the confidence fit were tuned or checked
on (1: the calibration page; 2: the confidence fit; 3, 4: tests; 5, 7, 11, 17: checks;
20261203: the figures published before the reference profile's network edges, whose
wrong cells were read)."""
EVALUATION_SEED = 20261207
"""The seed of the published figures: never used to tune a rule, a bar or a fit."""


@dataclass(frozen=True, slots=True)
class HardFacts:
    """What :func:`is_hard` reads of one scenario."""

    values: Mapping[str, float]
    """The model's true values, by the names of :data:`THRESHOLDS` (absent: not
    applicable, e.g. no reasoning)."""
    savings_ms: Mapping[str, float]
    """Each kind's saving on the user's workload, material or not."""
    bar_ms: float
    """The materiality bar of the user's request: a saving at least this large matters."""
    material: tuple[str, ...]
    """The material kinds, largest saving first."""
    heavy_tail: bool
    quirks: frozenset[str]
    bars_ms: Mapping[str, float] = field(default_factory=dict)
    """A kind's own bar where it is weighed on another request (a new connection's
    setup); the user's request's bar otherwise."""


def near(value: float, threshold: float) -> bool:
    return threshold > 0 and abs(value / threshold - 1.0) <= NEAR


def reasons(f: HardFacts) -> tuple[str, ...]:
    """Why a scenario is hard, in words; empty when it is not."""
    out = [
        f"{name} near {THRESHOLDS[name]:g}" for name, v in _values(f) if near(v, THRESHOLDS[name])
    ]
    out += [
        f"{kind} saving near the bar"
        for kind, v in f.savings_ms.items()
        if near(v, f.bars_ms.get(kind, f.bar_ms))
    ]
    if len(f.material) >= 2:
        first, second = (f.savings_ms[k] for k in f.material[:2])
        if second > 0 and first / second <= ALIKE:
            out.append(f"{f.material[0]} and {f.material[1]} alike")
    if f.heavy_tail:
        out.append("heavy-tailed noise")
    out += sorted(f"quirk {q}" for q in f.quirks)
    return tuple(out)


def is_hard(f: HardFacts) -> bool:
    return bool(reasons(f))


def healthy_with_quirks(f: HardFacts) -> bool:
    """A healthy endpoint (no material kind) with at least one of :data:`HEALTHY_QUIRKS`."""
    return not f.material and bool(f.quirks & HEALTHY_QUIRKS)


def _values(f: HardFacts) -> Iterable[tuple[str, float]]:
    return ((name, v) for name, v in f.values.items() if name in THRESHOLDS)


def facts_of(s: Scenario, cf: Counterfactual) -> HardFacts:
    """What :func:`is_hard` reads of ``s``, from its model and its counterfactual truth."""
    values: dict[str, float] = {
        "dns_ms": s.dns_ms,
        "rtt_ms": s.rtt_ms,
        "tpot_ms": s.tpot_ms,
        "uplink_mbit_s": s.uplink_bytes_per_ms / 125.0,
        "burst_ratio": _burst_ratio(s),
    }
    if s.tls:
        values["tls_extra_ms"] = s.tls_extra_ms
    if s.prompt_tokens > 128:
        growth = s.prefill_ms(s.prompt_tokens) - s.prefill_ms(128)
        values["prefill_ms_per_1k"] = growth / (s.prompt_tokens - 128) * 1000
    if s.reasoning_tokens:
        values["think_ms"] = s.think_ms()
    if s.stall_share > 0:
        values["stall_ms"] = s.stall_ms
    if s.buffer_events > 1 or s.buffer_whole:
        values["held_ms"] = (s.flush_events(s.stream_events()) - 1) * s.tpot_ms
    if s.client_delay_ms > 0:
        values["client_delay_ms"] = s.client_delay_ms
    if s.error_share > 0:
        values["error_share"] = s.error_share
    savings = {str(k): v for k, v in cf.savings_ms.items()}
    return HardFacts(
        values=values,
        savings_ms=savings,
        bar_ms=bar_ms(cf.typical_ms),
        bars_ms={str(k): v for k, v in cf.bars_ms.items()},
        material=tuple(str(k) for k in cf.material),
        heavy_tail=s.tail_share > 0,
        quirks=frozenset(s.quirks),
    )


def _wire_ttft(s: Scenario, prompt_tokens: int) -> float:
    return s.rtt_ms + s.prefill_ms(prompt_tokens)


def _burst_ratio(s: Scenario) -> float:
    """A request's TTFT among the burst's ``concurrency`` over alone, without noise."""
    alone = _wire_ttft(s, 128)
    service = s.service_ms(128)
    waits = burst_queue_ms(s, np.zeros(s.concurrency), np.full(s.concurrency, service))
    return (alone + float(np.median(waits))) / alone
