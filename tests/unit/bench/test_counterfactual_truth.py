"""The bank's counterfactual truth: defined apart from the rules it scores, and right on
endpoints whose answer is known by hand."""

from __future__ import annotations

import ast
import importlib
import inspect
from dataclasses import replace
from pathlib import Path

import pytest

import bank.counterfactual as cf_module
import bank.hard as hard_module
import bank.truth as rule_copying_module
from bank import Scenario, draw, draw_many
from bank.counterfactual import MATERIAL_MS, MATERIAL_SHARE, bar_ms, counterfactual, parts
from bank.hard import EVALUATION_SEED, TUNING_SEEDS, facts_of, is_hard
from latdoc.model import Kind

ANALYSIS_MODULES = (
    "latdoc.analysis.policy",
    "latdoc.analysis.noticeable",
    "latdoc.analysis.kinds.errors",
    "latdoc.analysis.kinds.network_setup",
    "latdoc.analysis.kinds.network_path",
    "latdoc.analysis.kinds.input_length",
    "latdoc.analysis.kinds.queueing",
    "latdoc.analysis.kinds.decode",
    "latdoc.analysis.kinds.reasoning",
    "latdoc.analysis.kinds.stalls",
    "latdoc.analysis.kinds.buffering",
    "latdoc.analysis.kinds.client",
)


@pytest.mark.parametrize(
    "module",
    [cf_module, hard_module, rule_copying_module],
    ids=["counterfactual", "hard", "rule-copying"],
)
def test_the_truth_and_the_hard_slice_import_nothing_of_the_analysis(module: object) -> None:
    tree = ast.parse(Path(inspect.getfile(module)).read_text())  # type: ignore[arg-type]
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert imported and not [m for m in imported if m and m.startswith("latdoc.analysis")]


@pytest.mark.parametrize("module", [cf_module, hard_module], ids=["counterfactual", "hard"])
def test_no_bank_constant_is_a_policy_constant_by_reference(module: object) -> None:
    """A number read from the analysis would move the truth with the rule it judges."""
    theirs = {
        id(value): f"{name}.{attr}"
        for name in ANALYSIS_MODULES
        for attr, value in vars(importlib.import_module(name)).items()
        if attr.isupper() and isinstance(value, float | int | tuple | frozenset | dict)
    }
    shared = [
        f"{attr} is {theirs[id(value)]}"
        for attr, value in vars(module).items()
        if attr.isupper()
        and id(value) in theirs
        and not isinstance(value, bool)
        # small ints are one object in CPython whoever writes them
        and not (isinstance(value, int) and -5 <= value <= 256)
    ]
    assert not shared


def test_a_healthy_endpoint_is_healthy_at_any_prompt_length() -> None:
    """At the reference profile's slow edge: a prefill of 62 ms per 1K tokens, 30.2 ms a
    token."""
    base = Scenario(seed=1, prefill_a_ms=60.0, prefill_b_ms=0.062, tpot_ms=30.2)
    for prompt in (128, 2048, 8192, 32768):
        truth = counterfactual(replace(base, prompt_tokens=prompt))
        assert truth.primary is Kind.HEALTHY, (prompt, truth.savings_ms)


def test_the_new_users_endpoint_is_input_length_at_8k_prompts() -> None:
    """Prefill 155 ms at 128 tokens, 0.7 s at 2K, 2.4 s at 8K, 9.2 s at 32K."""
    s = Scenario(seed=1, prefill_a_ms=120.0, prefill_b_ms=0.276, tpot_ms=20.0)
    assert 2300 < s.prefill_ms(8192) < 2500
    at_8k = counterfactual(replace(s, prompt_tokens=8000))
    assert at_8k.primary is Kind.INPUT_LENGTH
    # What a prefill at the profile's slow edge saves: (0.276 − 0.062) ms a token over
    # the tokens past the shortest prompt's 128, the jitter's mean on top.
    assert at_8k.savings_ms[Kind.INPUT_LENGTH] == pytest.approx(0.214 * 7872, rel=0.02)
    at_128 = counterfactual(replace(s, prompt_tokens=128))
    assert Kind.INPUT_LENGTH not in at_128.named


def test_a_far_region_costs_a_warm_request_its_extra_round_trips_only() -> None:
    near = Scenario(seed=1, rtt_ms=50.0, prompt_tokens=128)
    far = replace(near, rtt_ms=130.0)
    saving = counterfactual(far).savings_ms[Kind.NETWORK_PATH]
    gained = parts(far, new_connection=False)["total"] - parts(near, new_connection=False)["total"]
    assert saving == pytest.approx(gained)
    # One round trip for the request and its answer: 80 ms more, and the jitter's mean.
    assert 80 < saving < 82


def test_rare_errors_do_not_matter_and_frequent_ones_do() -> None:
    base = Scenario(seed=1, prompt_tokens=512)
    rare = counterfactual(replace(base, error_share=0.02, error_code="http:503"))
    assert rare.primary is Kind.HEALTHY
    assert rare.savings_ms[Kind.ERRORS] < bar_ms(rare.typical_ms)
    assert bar_ms(rare.typical_ms) == max(MATERIAL_MS, MATERIAL_SHARE * rare.typical_ms)
    frequent = counterfactual(replace(base, error_share=0.3, error_code="http:503"))
    assert frequent.primary is Kind.ERRORS


def test_the_primary_is_the_cause_whose_removal_saves_most() -> None:
    for s in draw_many(300, seed=17, realistic=True):
        truth = counterfactual(s)
        if truth.primary is Kind.HEALTHY:
            assert all(truth.savings_ms[k] < truth.bars_ms[k] for k in truth.savings_ms)
            continue
        assert truth.savings_ms[truth.primary] == max(truth.savings_ms[k] for k in truth.named)
        for kind in truth.named:
            assert truth.savings_ms[kind] >= truth.bars_ms[kind] >= MATERIAL_MS


def test_the_realistic_draw_keeps_the_plain_draws_endpoint() -> None:
    for seed in range(40):
        plain, real = draw(seed), draw(seed, realistic=True)
        # What no cause changes: the noise, the answer's length, the burst.
        assert (plain.jitter, plain.output_tokens, plain.concurrency) == (
            real.jitter,
            real.output_tokens,
            real.concurrency,
        )
        causes = [c.split("(")[0] for c in plain.label.split(" + ")]
        assert causes == [c.split("(")[0] for c in real.label.split(" + ")]


def test_the_hard_slice_holds_what_its_definition_says() -> None:
    quirky = Scenario(seed=1, prompt_tokens=512, tokens_per_event=8, quirks=("multi_token_events",))
    assert is_hard(facts_of(quirky, counterfactual(quirky)))
    near_dns = Scenario(seed=1, prompt_tokens=512, dns_ms=160.0)
    assert is_hard(facts_of(near_dns, counterfactual(near_dns)))
    plain = Scenario(
        seed=1, prompt_tokens=512, rtt_ms=20.0, dns_ms=10.0, tpot_ms=12.0, prefill_b_ms=0.016
    )
    assert not is_hard(facts_of(plain, counterfactual(plain)))
    assert EVALUATION_SEED not in TUNING_SEEDS
