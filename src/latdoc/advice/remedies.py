"""Findings become remedies, ranked for the user's scenario. Each contributing kind's
builder (:data:`_BUILDERS`: :mod:`._network`, :mod:`._serving`, :mod:`._client`,
:mod:`._buffering`, :mod:`._reasoning`) names its remedies; a negligible finding gets
none. Ranking: remedies with a gain first, by gain weighted by how much the scenario
cares (chat: latency first; batch: cost first; longdoc: quality with long input);
then the rest by that weight times the share of the kind they address; trade-offs
such as a smaller model always last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace

from latdoc.advice._buffering import buffering_remedies
from latdoc.advice._client import client_remedies, errors_remedies
from latdoc.advice._network import network_path_remedies, network_setup_remedies
from latdoc.advice._reasoning import reasoning_remedies
from latdoc.advice._serving import (
    decode_remedies,
    input_length_remedies,
    queueing_remedies,
    stalls_remedies,
)
from latdoc.model import Diagnosis, Finding, Kind, Remedy, RunContext, Scenario

WEIGHTS: dict[str, dict[Scenario, float]] = {
    "keep_alive": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.8},
    "dns_cache": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.6, Scenario.LONGDOC: 0.6},
    "pool_size": {Scenario.CHAT: 0.9, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.7},
    "http2": {Scenario.CHAT: 0.8, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.6},
    "async_client": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.6},
    "nearer_region": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.6},
    "tcp_settings": {Scenario.CHAT: 0.5, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.5},
    "trim_window": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.5},
    "summarize_history": {Scenario.CHAT: 0.8, Scenario.BATCH: 0.7, Scenario.LONGDOC: 0.4},
    "prompt_cache": {Scenario.CHAT: 0.9, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.9},
    "long_context_model": {Scenario.CHAT: 0.3, Scenario.BATCH: 0.3, Scenario.LONGDOC: 1.0},
    "spread_requests": {Scenario.CHAT: 0.8, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.7},
    "retries": {Scenario.CHAT: 0.9, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.9},
    "stall_timeout": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.6, Scenario.LONGDOC: 0.8},
    "max_tokens": {Scenario.CHAT: 0.8, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.6},
    "smaller_model": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.2},
    "client_cpu": {Scenario.CHAT: 1.0, Scenario.BATCH: 1.0, Scenario.LONGDOC: 1.0},
    "unbuffer_stream": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.8},
    "reasoning_effort": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.5},
    "non_reasoning_model": {Scenario.CHAT: 0.9, Scenario.BATCH: 0.7, Scenario.LONGDOC: 0.3},
}
DEFAULT_WEIGHT = 0.5


def recommend(diagnosis: Diagnosis, context: RunContext) -> tuple[Remedy, ...]:
    """Remedies for every contributing finding, ranked for ``context.scenario``."""
    remedies: dict[str, Remedy] = {}
    negligible = set(diagnosis.verdict.negligible)
    for finding in diagnosis.findings:
        if finding.kind in negligible:
            continue
        for remedy in _for_finding(finding, diagnosis, context):
            kept = remedies.get(remedy.key)
            if kept is None or (remedy.predicted_gain_ms or 0) > (kept.predicted_gain_ms or 0):
                remedies[remedy.key] = remedy
    shares = diagnosis.shares_ms
    return tuple(sorted(remedies.values(), key=lambda r: _rank(r, context.scenario, shares)))


def _rank(r: Remedy, scenario: Scenario, shares: Mapping[Kind, float]) -> tuple[int, int, float]:
    """Trade-offs last; before them, gains by size, then the rest by the share of the
    kind they address (what the run measured, not what the remedy would save)."""
    weight = WEIGHTS.get(r.key, {}).get(scenario, DEFAULT_WEIGHT)
    if r.predicted_gain_ms is not None:
        return (1 if r.tradeoff else 0, 0, -weight * r.predicted_gain_ms)
    return (1 if r.tradeoff else 0, 1, -weight * shares.get(r.addresses, 1.0))


def with_remedies(diagnosis: Diagnosis, context: RunContext) -> Diagnosis:
    return replace(diagnosis, remedies=recommend(diagnosis, context))


def _for_finding(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    builder = _BUILDERS.get(f.kind)
    if builder is not None:
        yield from builder(f, d, ctx)


_BUILDERS: dict[Kind, Callable[[Finding, Diagnosis, RunContext], Iterator[Remedy]]] = {
    Kind.NETWORK_SETUP: network_setup_remedies,
    Kind.NETWORK_PATH: network_path_remedies,
    Kind.INPUT_LENGTH: input_length_remedies,
    Kind.QUEUEING: queueing_remedies,
    Kind.ERRORS: errors_remedies,
    Kind.DECODE: decode_remedies,
    Kind.STALLS: stalls_remedies,
    Kind.BUFFERING: buffering_remedies,
    Kind.CLIENT: client_remedies,
    Kind.REASONING: reasoning_remedies,
}
"""Each kind's remedies. A remedy names the concrete change for httpx and the openai SDK,
computed for this machine, the user's settings and this run's numbers (pool size
``2 × cores + concurrency``, the window to trim to, a read timeout between the stream's
normal gaps and its stalls). A gain is printed only where this run measured it
(keep-alive: cold minus warm first byte) or the length curve models it (trimming: the
curve's prediction at the long prompt minus at the window), each with its 95% interval;
every other remedy carries the ``latdoc verify`` command that would measure it on this
endpoint, or says in words how one would."""
