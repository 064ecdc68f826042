"""One statistics policy: each value is read by every code path that tests its quantity,
an experiment's verdict is its table's headline row, and the docs list every value."""

from __future__ import annotations

import io
import random
import re
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import latdoc.analysis.policy as policy
from latdoc import Finding, Kind, RunContext, Sample, Step
from latdoc.advice import keys
from latdoc.advice.kinds.network_path import network_path_remedies
from latdoc.analysis.compare import MEDIAN, compare_samples
from latdoc.analysis.kinds.queueing import _client_queueing
from latdoc.analysis.stats import mann_whitney_p
from latdoc.features.load.analysis import Percentiles, find_knee, findings
from latdoc.features.verify import VerifyResult, verdict_line
from latdoc.features.verify.analysis import judge_arms
from latdoc.model import Diagnosis, Scenario, Verdict
from latdoc.report import comparison_to_dict, make_console, render_comparison
from paths import ROOT
from unit.analysis.test_compare import trace

DOCS = ROOT / "docs" / "method.md"


def _arm(median_ms: float, n: int, seed: int) -> list[Sample]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ttft = median_ms * rng.lognormvariate(0, 0.2)
        out.append(Sample(Step.EXPERIMENT, trace(ttft, ttft + 70), index=i))
    return out


def test_the_verdict_is_the_headline_row_of_the_table_printed_above_it() -> None:
    """A 10% faster B with p ≈ 0.02 on TTFT: before, the table (Holm over seven tests at
    0.01) said "TTFT: no significant difference (p = 0.10)" and the verdict under it
    (TTFT alone at 0.05) "better … p = 0.02"."""
    a, b = _arm(200, 20, 11), _arm(180, 20, 1011)
    p = mann_whitney_p([s.trace.ttft_ms for s in a], [s.trace.ttft_ms for s in b])
    assert p is not None and 0.01 < p < 0.05  # where the two old rules part
    verdict, comparison = judge_arms(a, b, metric="ttft", statistic=MEDIAN)
    row = comparison.primary
    assert row is not None and row.key == "ttft" and row.headline
    assert row.p_adjusted == row.p_value == p  # tested alone, as the verdict says
    assert (verdict, row.significant, row.faster) == ("better", True, "B")
    out = io.StringIO()
    make_console(out).print(render_comparison(comparison, a_label="A", b_label="B"))
    table = out.getvalue()
    line = verdict_line(VerifyResult("keepalive", verdict, headline=row, comparison=comparison))
    assert "TTFT: no significant difference" not in table
    assert "B: TTFT 1." in table and "faster than A" in table
    assert line.startswith("Verdict: better") and "p = 0.021" in line
    others = [m for g in comparison.groups for m in g.metrics if not m.headline]
    assert others and all(m.p_adjusted is not None for m in others)


def test_no_difference_in_the_headline_row_is_no_difference_in_the_verdict() -> None:
    a, b = _arm(200, 20, 3), _arm(200, 20, 4)
    verdict, comparison = judge_arms(a, b, metric="ttft", statistic=MEDIAN)
    assert comparison.primary is not None and not comparison.primary.significant
    assert verdict == "no_difference"


def test_the_rest_of_verify_s_table_is_read_after_its_headline() -> None:
    """B's TTFT is A's but its total is far longer: the table under a verdict of no
    difference said "total: A faster", a second family at α on the same screen."""
    a, b = _arm(200, 20, 3), _arm(200, 20, 4)
    b = [replace(s, trace=trace(s.trace.ttft_ms or 0, (s.trace.ttft_ms or 0) + 400)) for s in b]
    verdict, comparison = judge_arms(a, b, metric="ttft", statistic=MEDIAN)
    head = comparison.primary
    assert head is not None and head.p_value is not None and head.p_value >= policy.ALPHA
    total = comparison.groups[0].get("total")
    assert total is not None and total.p_value is not None and total.p_value < 0.001
    assert total.p_adjusted is not None and total.p_adjusted >= head.p_value
    assert verdict == "no_difference" and not total.significant
    # With the headline significant, the rest is read as a Holm family of its own.
    faster = [replace(s, trace=trace(150, 550)) for s in b]
    verdict, comparison = judge_arms(a, faster, metric="ttft", statistic=MEDIAN)
    total = comparison.groups[0].get("total")
    assert verdict == "better" and total is not None and total.significant


def test_a_significant_but_negligible_difference_is_none_in_both() -> None:
    """One bar (1 ms and 2% of A) for a comparison's rows and an experiment's verdict;
    the rows used 0.1 ms before."""
    a = [Sample(Step.EXPERIMENT, trace(100 + i * 0.01, 170), index=i) for i in range(40)]
    b = [Sample(Step.EXPERIMENT, trace(99.5 + i * 0.01, 170), index=i) for i in range(40)]
    verdict, comparison = judge_arms(a, b, metric="ttft", statistic=MEDIAN)
    row = comparison.primary
    assert row is not None and row.p_value is not None and row.p_value < policy.ALPHA
    assert policy.negligible(row.difference_ms, row.a_ms)
    assert not row.significant and verdict == "no_difference"
    plain = compare_samples(a, b).headline("ttft")
    assert plain is not None and not plain.significant


def _diagnosis() -> Diagnosis:
    return Diagnosis(
        "r", "http://x", "m", Scenario.CHAT, Verdict(Kind.NETWORK_PATH, (), 1.0),
        {}, (), (), {}, None, {},
    )  # fmt: skip


def _nearer_region(rtt_ms: float) -> bool:
    finding = Finding(Kind.NETWORK_PATH, "far", "rule", {"rtt_ms": rtt_ms}, rtt_ms, 1.0)
    ctx = RunContext("r", "http://x", "m", tcp_settings={"net.ipv4.tcp_slow_start_after_idle": 0})
    remedies = network_path_remedies(finding, _diagnosis(), ctx)
    return any(r.key == keys.NEARER_REGION for r in remedies)


def test_the_nearer_region_remedy_and_the_network_path_rule_fire_at_one_rtt() -> None:
    """The remedy fired from 60 ms, the rule from 100 ms."""
    from latdoc.analysis.kinds import network_path

    assert network_path.HIGH_RTT_MS is policy.HIGH_RTT_MS
    assert not _nearer_region(policy.HIGH_RTT_MS - 20)
    assert not _nearer_region(policy.HIGH_RTT_MS)
    assert _nearer_region(policy.HIGH_RTT_MS + 1)


def _level(p50_ms: float, *, delay_p50_ms: float = 0.0, delay_p95_ms: float = 0.0) -> Any:
    return SimpleNamespace(
        server_side_ttft_ms=Percentiles(p50_ms, p50_ms, p50_ms, p50_ms),
        server_ttft_ms=None,
        due_ttft_ms=None,
        warmup=0,
        steady=None,
        client_delay_ms=Percentiles(delay_p50_ms, delay_p95_ms, delay_p95_ms, delay_p50_ms),
        window=SimpleNamespace(partial=False, label="4", concurrency=4, rate=None, client=None),
        little=None,
        sustained=None,
        goodput_per_s=None,
        failures=(),
    )


def test_the_knee_and_the_queueing_rule_read_one_ratio_and_one_floor() -> None:
    """The knee was 1.5× alone; the queueing rule 1.5× and 100 ms more."""
    small = [_level(20.0), _level(40.0)]  # 2×, but 20 ms: the rule would not fire
    assert find_knee(small) is None
    big = [_level(200.0), _level(200.0 * policy.KNEE_RATIO + 1)]
    assert find_knee(big) is big[1]
    facts = SimpleNamespace(
        load={
            "ttft_cv": 0.0,
            "ttft_p95_over_p50": 1.0,
            "ttft_p50_ms": 20.0,
            "concurrent_over_sequential": 2.0,
            "concurrent_ttft_p50_ms": 40.0,
            "sequential_n": 10,
            "concurrency": 4,
        },
        server=None,
        server_account=None,
        loss=None,
        curve=None,
        long_reference_tokens=None,
    )
    assert _client_queueing(facts) is None
    facts.load |= {
        "ttft_p50_ms": 200.0,
        "concurrent_ttft_p50_ms": 301.0,
        "concurrent_over_sequential": 1.505,
    }
    finding = _client_queueing(facts)
    assert finding is not None and finding.kind == Kind.QUEUEING
    assert policy.queues_under_load(policy.KNEE_RATIO, policy.KNEE_MIN_RISE_MS)


def test_the_load_note_on_the_client_delay_reads_the_policys_median() -> None:
    """The load report noted a p95 of 5 ms; it notes a median above 10 ms."""
    analysis = SimpleNamespace(
        levels=[_level(100.0, delay_p50_ms=2.0, delay_p95_ms=30.0)],
        knee=None,
        unloaded_ttft_ms=None,
        plateau=None,
        slo=SimpleNamespace(any=False),
        peak_requests_per_s=None,
    )
    assert not any("client's own delay" in line for line in findings(analysis))  # type: ignore[arg-type]
    analysis.levels = [_level(100.0, delay_p50_ms=policy.CLIENT_DELAY_MS + 1)]
    assert any("client's own delay" in line for line in findings(analysis))  # type: ignore[arg-type]
    assert policy.CLIENT_DELAY_STATISTIC == "median"


def test_every_command_reads_the_one_alpha() -> None:
    from latdoc.analysis import compare
    from latdoc.features.vantage import analysis as vantage
    from latdoc.features.verify.conversation import analysis as conversation
    from latdoc.features.verify.retry import analysis as retry
    from latdoc.features.watch import analysis as clock

    for module in (clock, compare, vantage, conversation, retry):
        assert module.ALPHA is policy.ALPHA, module.__name__
    document = comparison_to_dict(compare_samples(_arm(100, 5, 1), _arm(100, 5, 2)), a={}, b={})
    assert document["alpha"] is policy.ALPHA


def _shown(value: object) -> str:
    return str(value)


def test_every_constant_of_the_policy_is_in_the_docs_table_with_its_value() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("### The statistics policy") :]
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| ([^|]+?) \|", section, flags=re.MULTILINE))
    constants = [n for n in policy.__all__ if n.isupper() and n != "FAMILIES"]
    assert constants
    for name in constants:
        assert name in rows, f"{name} is not in the table of docs/method.md"
        assert rows[name] == _shown(getattr(policy, name)), (name, rows[name])
    assert set(rows) == set(constants), set(rows) - set(constants)
    for family in policy.FAMILIES:
        assert ("Holm" if family.correction == policy.CORRECTION else "none") in section
