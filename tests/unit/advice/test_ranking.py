"""The ranking of remedies reads the user's priorities and each remedy's declared effects.

The scenarios are presets of priorities. Their orders are pinned for a few representative
diagnoses: where a preset's order differs from the one the hand-set per-scenario weights
gave before priorities, the test says why, in the seed's words.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import latdoc.advice.builders
from latdoc import Finding, Kind, RunContext, Scenario, Verdict, parse_priorities
from latdoc.advice import BUILDERS, keys, recommend, with_remedies
from latdoc.advice.kinds import RemedyBuilder
from latdoc.model import CostChange, Diagnosis, Effects, Priorities, QualityRisk
from report_samples import CURVE, make_diagnosis

CONTEXT = RunContext("r", "https://api.example.com/v1", "m", cpu_count=2, concurrency=4)
STALLS = {
    "stalls": 3.0, "longest_ms": 2500.0, "shortest_ms": 2200.0, "normal_gap_p99_ms": 40.0,
    "slowest_ttft_ms": 800.0,
}  # fmt: skip
EVIDENCE: dict[Kind, dict[str, float]] = {
    Kind.NETWORK_SETUP: {"setup_ms": 80.0},
    Kind.NETWORK_PATH: {"rtt_ms": 180.0, "long_prompt_send_ms": 400.0},
    Kind.INPUT_LENGTH: {"long_tokens": 8192.0, "prefill_per_1k_ms": 120.0},
    Kind.QUEUEING: {},
    Kind.DECODE: {"tpot_ms": 40.0},
    Kind.REASONING: {"reasoning_tokens": 800.0},
    Kind.STALLS: STALLS,
}
FITTED = replace(CURVE, draws=((340.0, 118.0, 19.0), (340.0, 122.0, 21.0), (340.0, 120.0, 20.0)))
"""The sample curve with bootstrap draws, so trimming's gain is fitted."""
MEASURED_KEEP_ALIVE = {
    "keepalive_saving_ms": 70.0, "keepalive_saving_low_ms": 60.0, "keepalive_saving_high_ms": 80.0,
}  # fmt: skip


def diagnosis(shares: dict[Kind, float], *, measured: bool = True) -> Diagnosis:
    """A diagnosis whose findings are ``shares``' kinds, the largest the verdict's; with
    ``measured``, keep-alive's saving is measured and trimming's fitted. Every title
    names DNS, so network setup gets its DNS remedy beside keep-alive."""
    kinds = sorted(shares, key=lambda k: -shares[k])
    findings = tuple(Finding(k, f"{k} (dns)", "a rule", EVIDENCE[k], shares[k], 0.9) for k in kinds)
    network = {**make_diagnosis().network, **(MEASURED_KEEP_ALIVE if measured else {})}
    return replace(
        make_diagnosis(length=FITTED if measured else CURVE),
        verdict=Verdict(kinds[0], tuple(kinds[1:]), 0.9),
        shares_ms=shares,
        findings=findings,
        remedies=(),
        network=network,
    )


def order(d: Diagnosis, ranked_for: Scenario | str) -> list[str]:
    if isinstance(ranked_for, Scenario):
        context = replace(CONTEXT, scenario=ranked_for)
    else:
        context = replace(CONTEXT, priorities=parse_priorities(ranked_for))
    return [r.key for r in recommend(d, context)]


INPUT_QUEUE_SETUP = diagnosis(
    {Kind.INPUT_LENGTH: 1480.0, Kind.QUEUEING: 610.0, Kind.NETWORK_SETUP: 77.0}
)
DECODE_STALLS = diagnosis({Kind.DECODE: 4000.0, Kind.STALLS: 900.0})
PATH_INPUT = diagnosis({Kind.NETWORK_PATH: 300.0, Kind.INPUT_LENGTH: 200.0})
QUEUE_DECODE = diagnosis({Kind.QUEUEING: 2000.0, Kind.DECODE: 500.0})
REASONING_SETUP = diagnosis({Kind.REASONING: 3000.0, Kind.NETWORK_SETUP: 400.0})
SETUP_MEASURED = diagnosis({Kind.NETWORK_SETUP: 300.0})
SETUP_UNMEASURED = diagnosis({Kind.NETWORK_SETUP: 300.0}, measured=False)


@pytest.mark.parametrize(
    ("d", "scenario", "expected"),
    [
        # Before, for chat: the smaller model and the long-context model last, as
        # trade-offs. Chat reads latency first: they address the largest share, so they
        # come before queueing's remedies (the seed's chat: "a low-latency model"), the
        # cheaper one first (chat reads cost before quality).
        (INPUT_QUEUE_SETUP, Scenario.CHAT, [
            "trim_window", "prompt_cache", "summarize_history", "smaller_model",
            "long_context_model", "async_client", "retries", "spread_requests", "keep_alive",
            "dns_cache",
        ]),
        # Before: spread_requests, retries, async_client after the input-length remedies
        # and the two models last. Batch reads cost first: a smaller model, which bills
        # less a token (the seed's batch: "a cheaper model"), goes before what costs the
        # same, a model served for long context, dearer, after everything. The three
        # queueing remedies cost the same: they keep queueing's own order.
        (INPUT_QUEUE_SETUP, Scenario.BATCH, [
            "trim_window", "prompt_cache", "summarize_history", "smaller_model",
            "async_client", "retries", "spread_requests", "keep_alive", "dns_cache",
            "long_context_model",
        ]),
        # Before: prompt_cache, trim_window, summarize_history, then queueing's and
        # keep-alive's. Long-document work reads quality first: what leaves the answers
        # as they are goes before what may change them, however much more it saves.
        (INPUT_QUEUE_SETUP, Scenario.LONGDOC, [
            "prompt_cache", "async_client", "retries", "spread_requests", "keep_alive",
            "dns_cache", "trim_window", "summarize_history", "long_context_model",
            "smaller_model",
        ]),
        # Before: max_tokens, stall_timeout, smaller_model for all three. Chat and batch
        # read quality last: the smaller model addresses the larger share, so it comes
        # before the stalls' bound; long-document work puts the bound, which changes no
        # answer, first.
        (DECODE_STALLS, Scenario.CHAT, ["max_tokens", "smaller_model", "stall_timeout"]),
        (DECODE_STALLS, Scenario.BATCH, ["max_tokens", "smaller_model", "stall_timeout"]),
        (DECODE_STALLS, Scenario.LONGDOC, ["stall_timeout", "max_tokens", "smaller_model"]),
        # Before, for chat: tcp_settings after trimming and summarising, held down by a
        # hand-set weight; it now goes with the larger share it addresses.
        (PATH_INPUT, Scenario.CHAT, [
            "nearer_region", "gateway", "tcp_settings", "trim_window", "prompt_cache",
            "summarize_history", "smaller_model", "long_context_model",
        ]),
        # Before: trim_window, prompt_cache, gateway, summarize_history, nearer_region,
        # tcp_settings, then the two models. Cost first: what bills less goes first.
        (PATH_INPUT, Scenario.BATCH, [
            "trim_window", "prompt_cache", "summarize_history", "smaller_model",
            "nearer_region", "gateway", "tcp_settings", "long_context_model",
        ]),
        (PATH_INPUT, Scenario.LONGDOC, [
            "nearer_region", "gateway", "tcp_settings", "prompt_cache", "trim_window",
            "summarize_history", "long_context_model", "smaller_model",
        ]),
        # As before.
        (QUEUE_DECODE, Scenario.CHAT, [
            "async_client", "retries", "spread_requests", "max_tokens", "smaller_model",
        ]),
        # Before: spread_requests, retries, async_client, max_tokens, smaller_model. Cost
        # first: what bills fewer tokens goes first.
        (QUEUE_DECODE, Scenario.BATCH, [
            "max_tokens", "smaller_model", "async_client", "retries", "spread_requests",
        ]),
        # Before: retries, spread_requests, async_client: hand-set weights no corner
        # tells apart, now in queueing's own order.
        (QUEUE_DECODE, Scenario.LONGDOC, [
            "async_client", "retries", "spread_requests", "max_tokens", "smaller_model",
        ]),
        # Before, for chat and batch: keep_alive and dns_cache first, the reasoning
        # remedies last as trade-offs. Latency first, or cost first (fewer reasoning tokens
        # billed), puts them first; quality first keeps them last, as before.
        (REASONING_SETUP, Scenario.CHAT, [
            "reasoning_effort", "non_reasoning_model", "keep_alive", "dns_cache",
        ]),
        (REASONING_SETUP, Scenario.BATCH, [
            "reasoning_effort", "non_reasoning_model", "keep_alive", "dns_cache",
        ]),
        (REASONING_SETUP, Scenario.LONGDOC, [
            "keep_alive", "dns_cache", "reasoning_effort", "non_reasoning_model",
        ]),
        # As before: a measured saving first.
        (SETUP_MEASURED, Scenario.CHAT, ["keep_alive", "dns_cache"]),
        (SETUP_MEASURED, Scenario.BATCH, ["keep_alive", "dns_cache"]),
        (SETUP_MEASURED, Scenario.LONGDOC, ["keep_alive", "dns_cache"]),
        # Before, for batch and longdoc: keep_alive first by a hand-set weight; the two
        # are alike in every corner, so network setup's own order.
        (SETUP_UNMEASURED, Scenario.CHAT, ["dns_cache", "keep_alive"]),
        (SETUP_UNMEASURED, Scenario.BATCH, ["dns_cache", "keep_alive"]),
    ],
)  # fmt: skip
def test_each_scenario_ranks_as_its_preset_of_priorities(
    d: Diagnosis, scenario: Scenario, expected: list[str]
) -> None:
    assert order(d, scenario) == expected
    assert order(d, ",".join(Priorities.preset(scenario).order)) == expected


def test_cost_first_moves_what_bills_fewer_tokens_up() -> None:
    latency_first = order(QUEUE_DECODE, "latency,quality,cost")
    cost_first = order(QUEUE_DECODE, "cost,latency,quality")
    assert latency_first.index("max_tokens") > latency_first.index("spread_requests")
    assert cost_first.index("max_tokens") < cost_first.index("spread_requests")
    setup_first = order(
        diagnosis({Kind.NETWORK_SETUP: 900.0, Kind.INPUT_LENGTH: 300.0}), "latency,quality,cost"
    )
    cache_first = order(
        diagnosis({Kind.NETWORK_SETUP: 900.0, Kind.INPUT_LENGTH: 300.0}), "cost,latency,quality"
    )
    assert setup_first.index("prompt_cache") > setup_first.index("keep_alive")
    assert cache_first.index("prompt_cache") < cache_first.index("keep_alive")
    assert cache_first[-1] == "long_context_model"  # the one remedy that costs more


def test_quality_first_moves_remedies_that_may_change_answers_down() -> None:
    latency_first = order(REASONING_SETUP, "latency,cost,quality")
    quality_first = order(REASONING_SETUP, "quality,latency,cost")
    assert latency_first[:2] == ["reasoning_effort", "non_reasoning_model"]
    assert quality_first[-2:] == ["reasoning_effort", "non_reasoning_model"]
    ranked = order(INPUT_QUEUE_SETUP, "quality,latency,cost")
    changing = ["trim_window", "summarize_history", "long_context_model", "smaller_model"]
    assert ranked[-4:] == changing  # unchanged answers first, a weaker model last


def test_weights_order_the_corners_and_a_corner_weighted_zero_is_not_read() -> None:
    assert order(INPUT_QUEUE_SETUP, "latency=3,cost=1,quality=2") == order(
        INPUT_QUEUE_SETUP, "latency,quality,cost"
    )
    assert order(DECODE_STALLS, "latency=1,cost=0,quality=0") == [
        "max_tokens", "smaller_model", "stall_timeout",
    ]  # fmt: skip
    # Without latency, the larger share no longer counts.
    assert order(DECODE_STALLS, "quality=2,latency=0,cost=0") == [
        "stall_timeout", "max_tokens", "smaller_model",
    ]  # fmt: skip
    # Cost alone: max_tokens and the smaller model both bill less; alike in cost, they
    # keep decode's own order, though the smaller model may lower the answers' quality.
    assert order(DECODE_STALLS, "cost=1,latency=0,quality=0") == [
        "max_tokens", "smaller_model", "stall_timeout",
    ]  # fmt: skip


def test_every_remedy_is_declared_once_alike_wherever_it_is_given() -> None:
    declared: dict[str, Effects] = {}
    for builder in BUILDERS:
        for key, effects in builder.effects.items():
            assert declared.setdefault(key, effects) == effects, key
    assert set(declared) == {getattr(keys, name) for name in keys.__all__}
    changing = {k for k, e in declared.items() if e.quality is not QualityRisk.NONE}
    assert changing == {
        keys.TRIM_WINDOW, keys.SUMMARIZE_HISTORY, keys.MAX_TOKENS, keys.SMALLER_MODEL,
        keys.LONG_CONTEXT_MODEL, keys.REASONING_EFFORT, keys.NON_REASONING_MODEL,
    }  # fmt: skip
    assert declared[keys.LONG_CONTEXT_MODEL].cost is CostChange.HIGHER
    assert declared[keys.KEEP_ALIVE] == Effects()


def test_a_remedy_its_kind_does_not_declare_is_our_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    (decode,) = [b for b in BUILDERS if b.kind is Kind.DECODE]
    undeclared = RemedyBuilder(Kind.DECODE, decode.build, {keys.MAX_TOKENS: Effects()})
    others = tuple(b for b in BUILDERS if b.kind is not Kind.DECODE)
    monkeypatch.setattr(latdoc.advice.builders, "BUILDERS", (*others, undeclared))
    with pytest.raises(LookupError, match="smaller_model"):
        order(DECODE_STALLS, Scenario.CHAT)


def test_the_diagnosis_names_what_it_was_ranked_for() -> None:
    told = replace(CONTEXT, priorities=parse_priorities("cost,latency,quality"))
    assert with_remedies(DECODE_STALLS, told).priorities == told.priorities
    preset = with_remedies(DECODE_STALLS, replace(CONTEXT, scenario=Scenario.BATCH))
    assert preset.priorities == Priorities.preset(Scenario.BATCH)
    assert preset.priorities is not None
    assert preset.priorities.text() == "cost > latency > quality (--scenario batch)"
