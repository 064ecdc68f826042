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
  length, a budget of a few seconds), run both ways beside its truth by
  counterfactual (:func:`bank.counterfactual.counterfactual`: what removing each cause
  saves the scenario's user), with the figures each diagnosis read (:class:`Figures`).

What the lab plays as the bank models it: prefill ``a + b·n + c·n²``, decode per
token, reasoning tokens streamed before the answer, ``slots`` held from the prefill to
the last token (the load step's burst queues on them), a server that closes every
connection, mid-stream stalls in a share of streams, a share of failed requests (429,
503, or a stream broken mid-way by a reset), and three quirks of real endpoints:
several tokens per streamed event (4, 8, or an irregular 1 to 8 drawn per event),
headers at once and SSE keep-alive comments while a request waits for its slot and
prefill, and decode that slows with the streams in flight (each token gap
×(1 + s·(streams − 1))). What it cannot: a slow path (DNS, round trip, TLS work,
uplink; its namespaced network needs root), the client's own delay, the bank's busy
periods, in spells or not (the lab's background load is a stream of requests on the
slots, a different model), a buffering hop (that needs a proxy in front), reasoning
hidden from the stream or varying from request to request, a first-token timeout (it
waits out the client's read timeout), a server that tells its timing otherwise, a
heavy tail on the server's times (the lab's jitter is uniform and bounded) and drift
of the server's speed within a run (the lab's model is the same from its first
request to its last).

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
  after half the answer's tokens (the next request then opens a new connection);
- **keep-alive comments**: both send the headers at once and a comment every
  :data:`~bank.scenario.KEEPALIVE_COMMENT_MS` ms while a request waits for its slot,
  short beside the seconds a real server waits between two (so that one fires in a
  wait of a few hundred ms, and the probe meets comments between the headers and the
  first event as it would on a long wait), long beside the lab's cost of a write. The lab's
  ``Server-Timing`` is then sent before the wait and tells the time per token only;
  the bank's still tells the queue and the prefill;
- **irregular events**: each side draws its own events' sizes, evenly from 1 to 8
  tokens, from its own seed;
- **batch slowdown**: the bank slows every gap of a burst's request by the burst's
  streams (its concurrency, at most its slots), the lab each event's gap by the
  streams decoding when it is written, so a burst's first and last gaps, when its
  streams start or end apart, are slowed less on the wire.

What the wire adds on its own: loopback and the lab's Python cost a few ms before the
first token and a ms or so after the last. Its random draws (the jitter, which streams
stall or fail) are its own, so a borderline cause can fall into one run and not the
other.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bank.counterfactual import Counterfactual, counterfactual
from bank.draw import draw
from bank.generate import context, generate
from bank.scenario import KEEPALIVE_COMMENT_MS, Scenario
from bank.truth import (
    CLIENT_DELAY_MS,
    HIGH_RTT_MS,
    LONG_UPLOAD_TOKENS,
    SLOW_DNS_MS,
    SLOW_TLS_EXTRA_MS,
    SLOW_UPLOAD_MS,
    upload_ms_of,
)
from latdoc import ConnectionOptions, DiagnosisPlan, Endpoint, build_diagnosis, measure_steps
from latdoc.analysis.kinds.decode import token_tpot_ms
from latdoc.lab.sim import Fault, LabConfig, LabProcess, LatencyModel
from latdoc.model import Diagnosis, Kind
from latdoc.records import Sample, Step, StepNote
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
IRREGULAR_EVENT_TOKENS = (1, 8)
"""The fewest and the most tokens of an irregular server's event (the bank's
``tokens_per_event`` 0): each drawn evenly between them."""


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
    if s.busy_share > 0 and s.busy_ms > 0 and s.spell_s > 0:
        return (
            "the lab's background load is a stream of requests, not the bank's busy "
            "periods in spells"
        )
    if s.busy_share > 0 and s.busy_ms > 0:
        return "the lab's background load is a stream of requests, not the bank's busy periods"
    if s.buffer_whole or s.buffer_events > 1:
        return "a buffering hop needs a proxy in front of the lab"
    if s.tail_share > 0:
        return "the lab's jitter is uniform and bounded: it has no heavy tail"
    if s.drift != 0:
        return "the lab's speed does not drift within a run"
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
        batch_slowdown=s.batch_slowdown,
    )
    irregular = s.tokens_per_event == 0
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
        tokens_per_event=IRREGULAR_EVENT_TOKENS[0] if irregular else s.tokens_per_event,
        tokens_per_event_max=IRREGULAR_EVENT_TOKENS[1] if irregular else None,
        keepalive_comment_ms=KEEPALIVE_COMMENT_MS if s.keepalive_comments else 0.0,
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
        # Each change names one of the scenario's fields; replace() checks its name.
        changes: dict[str, Any] = {"output_tokens": self.output_tokens, **self.changes}
        s = replace(s, **changes)
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
    """Decode ms per token of the network step's warm requests, as the diagnosis's
    network figures give it: the stream after the first event over the output tokens
    after the first (an event of several tokens makes it short of the model's)."""
    token_tpot_ms: float | None
    """The same requests' ms per token as the decode rule reads it (each event's
    tokens counted as the usage tells them)."""
    burst_tpot_ms: float | None
    """Ms per token, read as the decode rule reads it, of the load step's burst."""
    burst_ttfb_ms: float | None
    """The burst's median time to its first byte (a queue shows in it, unless the server
    sends its headers before the queue)."""
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
    def of(cls, d: Diagnosis, samples: Iterable[Sample]) -> Figures:
        """What ``d`` read, and the per-token readings of the ``samples`` it read."""
        samples = list(samples)
        warm = [x for x in samples if x.step is Step.NETWORK and not x.cold]
        burst = [x for x in samples if x.step is Step.LOAD and x.concurrency > 1]
        v = d.verdict
        check = d.length_check
        stalls = next((f for f in d.findings if f.kind is Kind.STALLS), None)
        return cls(
            v.primary,
            v.contributing,
            None if check is None else check.ratio,
            d.load.get("ttft_p50_ms"),
            d.network.get("tpot_ms"),
            _token_tpot_ms(warm),
            _token_tpot_ms(burst),
            _median([x.trace.ttfb_ms for x in burst]),
            d.load.get("concurrent_over_sequential"),
            {k: ms for k, ms in d.shares_ms.items() if k is not Kind.HEALTHY},
            0 if stalls is None else round(stalls.evidence.get("requests", 0.0)),
            d.failed,
            d.requests,
            dict(d.requests_by_step),
            tuple(note.text for note in d.notes),
        )


def _token_tpot_ms(samples: Iterable[Sample]) -> float | None:
    """The median ms per token of the ``samples`` that streamed, as the decode rule
    reads each."""
    return _median([token_tpot_ms(x.trace) for x in samples if x.trace.error is None])


def _median(values: Iterable[float | None]) -> float | None:
    read = [v for v in values if v is not None]
    return statistics.median(read) if read else None


@dataclass(frozen=True, slots=True)
class Comparison:
    """One case run both ways, beside its truth."""

    case: Case
    scenario: Scenario
    truth: Counterfactual
    """What removing each cause saves the scenario's user (its prompt, output and
    concurrency)."""
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
    bank_run = generate(s, max_seconds=case.max_seconds)
    bank = build_diagnosis(bank_run, context(s))
    started = time.perf_counter()
    with LabProcess(config, tls=case.tls) as lab:
        cacert = lab.ca_file if case.tls else None
        run = measure(s, lab.base_url, max_seconds=case.max_seconds, cacert=cacert)
    wire = build_diagnosis(run.samples, replace(context(s), notes=run.notes))
    seconds = time.perf_counter() - started
    return Comparison(
        case,
        s,
        counterfactual(s),
        Figures.of(bank, bank_run),
        Figures.of(wire, run.samples),
        seconds,
    )
