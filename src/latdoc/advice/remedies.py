"""Findings become remedies, ranked for the user's scenario. Each contributing kind's
builders (:mod:`.builders`: one module per kind in :mod:`.kinds`) name its remedies; a
negligible finding gets none. Ranking, weighted by how much the scenario cares (chat:
latency first; batch: cost first; longdoc: quality with long input): by the share of
the kind a remedy addresses, the most it could save; where that ties, the remedies whose
gain this run measured or fitted first; trade-offs such as a smaller model always last.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

from latdoc.advice import keys
from latdoc.advice.builders import builders_for
from latdoc.model import Diagnosis, Finding, Kind, Remedy, RunContext, Scenario

WEIGHTS: dict[str, dict[Scenario, float]] = {
    keys.KEEP_ALIVE: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.8},
    keys.DNS_CACHE: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.6, Scenario.LONGDOC: 0.6},
    keys.ADDRESS_FAMILY: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.6, Scenario.LONGDOC: 0.6},
    keys.TLS_RESUMPTION: {Scenario.CHAT: 0.7, Scenario.BATCH: 0.5, Scenario.LONGDOC: 0.5},
    keys.LOSSY_PATH: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.7, Scenario.LONGDOC: 0.8},
    keys.POOL_SIZE: {Scenario.CHAT: 0.9, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.7},
    keys.HTTP2: {Scenario.CHAT: 0.8, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.6},
    keys.ASYNC_CLIENT: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.6},
    keys.NEARER_REGION: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.6},
    keys.GATEWAY: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.5, Scenario.LONGDOC: 0.6},
    keys.PROXY_BYPASS: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.6, Scenario.LONGDOC: 0.6},
    keys.PROXY_KEEP_ALIVE: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.8},
    keys.NEARER_PROXY: {Scenario.CHAT: 0.9, Scenario.BATCH: 0.5, Scenario.LONGDOC: 0.6},
    keys.TCP_SETTINGS: {Scenario.CHAT: 0.5, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.5},
    keys.TRIM_WINDOW: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.5},
    keys.SUMMARIZE_HISTORY: {Scenario.CHAT: 0.8, Scenario.BATCH: 0.7, Scenario.LONGDOC: 0.4},
    keys.PROMPT_CACHE: {Scenario.CHAT: 0.9, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.9},
    keys.LONG_CONTEXT_MODEL: {Scenario.CHAT: 0.3, Scenario.BATCH: 0.3, Scenario.LONGDOC: 1.0},
    keys.SPREAD_REQUESTS: {Scenario.CHAT: 0.8, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.7},
    keys.RETRIES: {Scenario.CHAT: 0.9, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.9},
    keys.STALL_TIMEOUT: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.6, Scenario.LONGDOC: 0.8},
    keys.MAX_TOKENS: {Scenario.CHAT: 0.8, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.6},
    keys.SMALLER_MODEL: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.2},
    keys.CLIENT_CPU: {Scenario.CHAT: 1.0, Scenario.BATCH: 1.0, Scenario.LONGDOC: 1.0},
    keys.UNBUFFER_STREAM: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.8},
    keys.REASONING_EFFORT: {Scenario.CHAT: 1.0, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.5},
    keys.NON_REASONING_MODEL: {Scenario.CHAT: 0.9, Scenario.BATCH: 0.7, Scenario.LONGDOC: 0.3},
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


def _rank(
    r: Remedy, scenario: Scenario, shares: Mapping[Kind, float]
) -> tuple[int, float, int, float]:
    """Trade-offs last; before them, by what the remedy's kind adds to a typical request
    (the most any remedy of it can save) weighted for the scenario, so a small measured
    saving never outranks the fix for the verdict's seconds; where that ties (remedies of
    one kind and weight), the ones whose gain the run measured or fitted first, larger
    gains first."""
    weight = WEIGHTS.get(r.key, {}).get(scenario, DEFAULT_WEIGHT)
    measured = r.predicted_gain_ms is not None
    return (
        1 if r.tradeoff else 0,
        -weight * shares.get(r.addresses, 0.0),
        0 if measured else 1,
        -weight * (r.predicted_gain_ms or 0.0),
    )


def with_remedies(diagnosis: Diagnosis, context: RunContext) -> Diagnosis:
    """``diagnosis`` with its remedies, ranked for the run's scenario."""
    return replace(diagnosis, remedies=recommend(diagnosis, context))


def _for_finding(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    """Each remedy a kind's builders (:mod:`.builders`) name for ``f``. A remedy names the
    concrete change for httpx and the openai SDK, computed for this machine, the user's
    settings and this run's numbers (pool size ``2 × cores + concurrency``, the window to
    trim to, a read timeout between the stream's normal gaps and its stalls). A gain is
    printed only where this run measured it (keep-alive: cold minus warm first byte) or
    the length curve models it (trimming: the curve's prediction at the long prompt minus
    at the window), each with its 95% interval; every other remedy carries the ``latdoc
    verify`` command that would measure it on this endpoint, or says in words how one
    would."""
    for build in builders_for(f.kind):
        yield from build(f, d, ctx)
