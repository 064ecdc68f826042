"""A bank scenario played by the simulated endpoint, and measured over the wire.

The bank's generator (:mod:`bank.generate`) writes the samples a diagnosis run of a
scenario would record; this module runs the real one against the lab
(:mod:`latdoc.lab.sim`) set up as the same model, so the two can be read side by
side.

- :func:`unplayable`: why the lab cannot play a scenario on loopback, or ``None``;
- :func:`lab_config`: the :class:`~latdoc.lab.sim.LabConfig` that plays it;
- :func:`on_loopback`: the scenario as the lab plays it, for the bank's own run and
  truth: the lab is reached on loopback, so whatever path the scenario draws, the run
  over the wire meets loopback's (no DNS lookup for an IP address, a round trip of a
  few hundredths of a millisecond, no bandwidth limit to speak of); and the lab
  tells its timing in a ``Server-Timing`` header (queue, prefill, time per token);
- :func:`measure` and :func:`diagnose_on_wire`: the real run (``measure_steps`` with
  a :class:`~latdoc.DiagnosisPlan` of the scenario's output length, concurrency and
  seed) and its diagnosis;
- :class:`Case` and :func:`compare`: a drawn scenario kept short (a small output
  length, a budget of a few seconds), run both ways beside its truth, with the
  figures each diagnosis read (:class:`Figures`).

What the lab plays as the bank models it: prefill ``a + b·n + c·n²``, decode per
token, reasoning tokens streamed before the answer, ``slots`` held from the prefill to
the last token (the load step's burst queues on them), a server that closes every
connection, mid-stream stalls in a share of streams, and a share of failed requests
(429, 503, or a stream broken mid-way by a reset). What it cannot: a slow path (DNS,
round trip, TLS work, uplink; its namespaced network needs root), the client's own
delay, the bank's busy periods (the lab's background load is a stream of requests on
the slots, a different model), a buffering hop (that needs a proxy in front),
reasoning hidden from the stream or varying from request to request, a first-token
timeout (it waits out the client's read timeout), and a server that tells its timing
otherwise.

Where the two model one thing differently the mapping chooses the lab's knob so the
figures the analysis reads agree:

- **jitter**: the bank draws every server time ×lognormal(0, σ); the lab adds
  uniform(−j, +j) ms to the prefill and to every token gap. ``j`` is set so the
  short prompt's prefill has the bank's spread (sd ``σ·prefill(128)``, a uniform's sd
  is ``j/√3``), at most the time per token so no gap is clipped at zero (which would
  slow the decode). Long prompts' prefills vary less on the lab than in the bank
  (the same ``j`` ms, not σ of a longer time), and each token gap far more (sd
  ``j/√3`` against ``σ·tpot``): where a short prefill is long beside the time per
  token, a run's median ms per token wanders by a tenth or two of it;
- **stalls**: the bank stalls once in a random gap mid-stream for ×0.8–1.2 of
  ``stall_ms``; the lab after a fixed token (the middle of the answer) for exactly it;
- **a broken stream**: the bank keeps half the events, the lab resets the connection
  after half the answer's tokens (the next request then opens a new connection).

What the wire adds on its own: loopback and the lab's Python cost a few ms before the
first token and a ms or so after the last. Its random draws (the jitter, which streams
stall or fail) are its own, so a borderline cause can fall into one run and not the
other.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from bank.draw import draw
from bank.generate import context, generate
from bank.scenario import Scenario
from bank.truth import (
    CLIENT_DELAY_MS,
    HIGH_RTT_MS,
    LONG_UPLOAD_TOKENS,
    SLOW_DNS_MS,
    SLOW_TLS_EXTRA_MS,
    SLOW_UPLOAD_MS,
    Truth,
    truth,
    upload_ms_of,
)
from latdoc import ConnectionOptions, DiagnosisPlan, Endpoint, build_diagnosis, measure_steps
from latdoc.lab.sim import Fault, LabConfig, LabProcess, LatencyModel
from latdoc.model import Diagnosis, Kind
from latdoc.records import Sample, StepNote
from latdoc.workload import LENGTHS

LOOPBACK_RTT_MS = 0.05
"""A round trip on loopback."""
LOOPBACK_BYTES_PER_MS = 1_000_000.0
"""Loopback's bandwidth, 8 Gbit/s: no prompt's upload is worth a millisecond."""
MODEL = LabConfig().model
FAULTS = {
    "http:429": Fault.RATE_LIMIT,
    "http:503": Fault.UNAVAILABLE,
    "stream_broken": Fault.RESET,
}
"""The bank's error codes the lab plays, and the fault that plays each."""
MIN_STALL_TOKENS = 5
"""The bank stalls only a stream of five output tokens or more (four gaps)."""


def unplayable(s: Scenario) -> str | None:
    """Why the lab cannot play ``s`` on loopback, in words; ``None`` when it can."""
    if s.dns_ms > SLOW_DNS_MS:
        return f"a slow DNS lookup ({s.dns_ms:.0f} ms) cannot be played on loopback"
    if s.rtt_ms > HIGH_RTT_MS:
        return f"a far region (RTT {s.rtt_ms:.0f} ms) cannot be played on loopback"
    if s.tls and s.tls_extra_ms > SLOW_TLS_EXTRA_MS:
        return f"slow TLS work ({s.tls_extra_ms:.0f} ms) cannot be played on loopback"
    if upload_ms_of(s, LONG_UPLOAD_TOKENS) > SLOW_UPLOAD_MS:
        return "a slow uplink cannot be played on loopback"
    if s.client_delay_ms > CLIENT_DELAY_MS:
        return "the client's own delay is the client's, not the endpoint's"
    if s.busy_share > 0 and s.busy_ms > 0:
        return "the lab's background load is a stream of requests, not the bank's busy periods"
    if s.buffer_whole or s.buffer_events > 1:
        return "a buffering hop needs a proxy in front of the lab"
    if s.reasoning_tokens > 0 and not s.reasoning_shown:
        return "the lab streams its reasoning: it cannot hide it"
    if s.reasoning_tokens > 0 and s.reasoning_spread > 0:
        return "the lab reasons the same count of tokens in every request"
    if s.server_timing not in ("", "server-timing"):
        return "the lab tells its timing only in a Server-Timing header"
    if s.error_share > 0 and s.error_code not in FAULTS:
        return f"the lab cannot play {s.error_code} errors on a short budget"
    if s.stall_share > 0 and s.stall_ms > 0 and s.output_tokens < MIN_STALL_TOKENS:
        return "a stall needs an answer of five tokens or more"
    return None


def lab_jitter_ms(s: Scenario) -> float:
    """The lab's uniform jitter whose spread is the bank's on the short prompt's prefill,
    at most the time per token (see the module's notes)."""
    sd = s.jitter * s.prefill_ms(LENGTHS[0])
    return min(math.sqrt(3.0) * sd, s.tpot_ms)


def lab_config(s: Scenario) -> LabConfig | None:
    """The lab configuration that plays ``s``, or ``None`` when :func:`unplayable`
    names a cause it cannot play. The path is loopback's whatever ``s`` draws: the
    bank's run of the same endpoint is ``generate(on_loopback(s))``."""
    if unplayable(s) is not None:
        return None
    stalls = s.stall_share > 0 and s.stall_ms > 0
    fault = FAULTS.get(s.error_code) if s.error_share > 0 else None
    latency = LatencyModel(
        prefill_base_ms=s.prefill_a_ms,
        prefill_ms_per_token=s.prefill_b_ms,
        prefill_ms_per_token2=s.prefill_c_ms,
        decode_ms_per_token=s.tpot_ms,
        jitter_ms=lab_jitter_ms(s),
        reasoning_tokens=s.reasoning_tokens,
    )
    return LabConfig(
        latency=latency,
        default_max_tokens=s.output_tokens,
        keep_alive=not s.server_closes,
        seed=s.seed,
        slots=s.slots,
        stall_after_token=s.output_tokens // 2 if stalls else None,
        stall_ms=s.stall_ms if stalls else 0.0,
        stall_rate=s.stall_share if stalls else 1.0,
        fault=fault,
        fault_rate=s.error_share if fault is not None else 1.0,
        fault_after_tokens=max(1, s.output_tokens // 2),
    )


def on_loopback(s: Scenario, *, tls: bool = False) -> Scenario:
    """``s`` as the lab plays it (with ``tls`` when it is served over TLS): loopback's
    path and the lab's ``Server-Timing``."""
    return replace(
        s,
        dns_ms=0.0,
        rtt_ms=LOOPBACK_RTT_MS,
        tls=tls,
        tls_extra_ms=0.0,
        uplink_bytes_per_ms=LOOPBACK_BYTES_PER_MS,
        server_timing="server-timing",
    )


@dataclass(frozen=True, slots=True)
class WireRun:
    """What the real run recorded, and its notes."""

    samples: list[Sample]
    notes: tuple[StepNote, ...]


def measure(
    s: Scenario, base_url: str, *, max_seconds: float, cacert: str | None = None
) -> WireRun:
    """A real diagnosis run of ``s``'s plan against the lab at ``base_url``: the
    scenario's output length, load concurrency and seed, within ``max_seconds``."""
    plan = DiagnosisPlan(
        Endpoint(base_url, MODEL),
        ConnectionOptions(cacert=cacert),
        max_tokens=s.output_tokens,
        max_seconds=max_seconds,
        seed=s.seed,
        concurrency=s.concurrency,
    )
    result = asyncio.run(measure_steps(plan))
    return WireRun(result.samples, tuple(result.notes))


def diagnose_on_wire(
    s: Scenario, base_url: str, *, max_seconds: float, cacert: str | None = None
) -> Diagnosis:
    """The diagnosis of a real run of ``s``'s plan against the lab at ``base_url``, read
    with the context the bank gives its own run."""
    run = measure(s, base_url, max_seconds=max_seconds, cacert=cacert)
    return build_diagnosis(run.samples, replace(context(s), notes=run.notes))


@dataclass(frozen=True, slots=True)
class Case:
    """A bank scenario kept short enough to run over the wire: drawn from ``seed`` with
    its causes, intensity and noise, its output length set to ``output_tokens``, any
    field in ``changes`` set, on loopback (over TLS with ``tls``); both runs get
    ``max_seconds``."""

    name: str
    seed: int
    causes: tuple[str, ...] = ()
    intensity: str = "clear"
    noise: str = "low"
    output_tokens: int = 8
    max_seconds: float = 8.0
    tls: bool = False
    changes: Mapping[str, float | int | bool | str] = field(default_factory=dict)

    def scenario(self) -> Scenario:
        s = draw(self.seed, self.causes, self.intensity, self.noise)
        s = replace(s, output_tokens=self.output_tokens, **self.changes)
        return on_loopback(s, tls=self.tls)


@dataclass(frozen=True, slots=True)
class Figures:
    """What one diagnosis read, for reading two side by side."""

    primary: Kind
    contributing: tuple[Kind, ...]
    length_ratio: float | None
    """The length rule's ratio: TTFT at its long length over its short one."""
    ttft_alone_ms: float | None
    """TTFT p50 of the requests sent alone (the load step's dispersion)."""
    tpot_ms: float | None
    """Decode ms per token of the network step's warm requests."""
    burst_ratio: float | None
    """The burst's median TTFT over the TTFT of requests sent alone."""
    shares_ms: Mapping[Kind, float]
    """Each kind's share of the typical request, as the diagnosis measured it."""
    stalled: int
    """Requests the stall rule found a stall in."""
    failed: int
    requests: int
    by_step: Mapping[str, int]
    notes: tuple[str, ...] = ()
    """What the steps noted (why a step sent more or fewer requests)."""

    @classmethod
    def of(cls, d: Diagnosis) -> Figures:
        v = d.verdict
        check = d.length_check
        stalls = next((f for f in d.findings if f.kind is Kind.STALLS), None)
        return cls(
            v.primary,
            v.contributing,
            None if check is None else check.ratio,
            d.load.get("ttft_p50_ms"),
            d.network.get("tpot_ms"),
            d.load.get("concurrent_over_sequential"),
            {k: ms for k, ms in d.shares_ms.items() if k is not Kind.HEALTHY},
            0 if stalls is None else round(stalls.evidence.get("requests", 0.0)),
            d.failed,
            d.requests,
            dict(d.requests_by_step),
            tuple(note.text for note in d.notes),
        )


@dataclass(frozen=True, slots=True)
class Comparison:
    """One case run both ways, beside its truth."""

    case: Case
    scenario: Scenario
    truth: Truth
    bank: Figures
    wire: Figures
    wire_seconds: float
    """How long the real run took, the lab's start and stop included."""

    @property
    def agree(self) -> bool:
        """Bank and wire name the same primary kind."""
        return self.bank.primary is self.wire.primary


def compare(case: Case) -> Comparison:
    """``case`` run by the bank's generator and by the real run against the lab."""
    s = case.scenario()
    config = lab_config(s)
    if config is None:
        raise ValueError(f"{case.name}: {unplayable(s)}")
    bank = build_diagnosis(generate(s, max_seconds=case.max_seconds), context(s))
    started = time.perf_counter()
    with LabProcess(config, tls=case.tls) as lab:
        cacert = lab.ca_file if case.tls else None
        wire = diagnose_on_wire(s, lab.base_url, max_seconds=case.max_seconds, cacert=cacert)
    seconds = time.perf_counter() - started
    return Comparison(case, s, truth(s), Figures.of(bank), Figures.of(wire), seconds)
