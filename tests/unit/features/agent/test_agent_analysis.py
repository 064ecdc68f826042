"""An agent's run from its spans: each instant counted once by the most specific span
running, tool calls that could have run at once, the context's growth and what the
window and the reset would save, on runs whose answers are known by construction."""

from __future__ import annotations

import dataclasses

import pytest

from latdoc.features.agent import agent_document, analyse_agent
from latdoc.features.agent.analysis import ranked_remedies
from latdoc.model import Kind
from latdoc.workload.otlp import AgentSpan
from report_samples import make_trace

MS = 1_000_000


def _span(role: str, trace: str, own: str, parent: str | None, start: float, end: float,
          name: str = "", prompt: int | None = None, ttft: float = 40.0) -> AgentSpan:  # fmt: skip
    """A span from ms offsets; a model span carries a trace with the prompt and TTFT."""
    call = None
    if role == "model":
        call = dataclasses.replace(
            make_trace(dns=None, connect=None, tls=None, send=0.0, wait=ttft, first_token=0.0,
                       stream=end - start - ttft),
            prompt_tokens=prompt,
        )  # fmt: skip
    return AgentSpan(
        role, name or role, trace, own, parent, round(start * MS), round(end * MS), call
    )


def _turn(trace: str, at: float, prompt: int, tool_ms: float, ttft: float) -> list[AgentSpan]:
    """One user turn as the Agents SDK traces it: the agent, a model call answering with
    a tool call, the tool, a model call answering in text; 10 ms of the agent's own work
    before each call."""
    first_end = at + 10 + 200
    tool_end = first_end + tool_ms
    second_end = tool_end + 10 + 150
    return [
        _span("agent", trace, "root", None, at, second_end, "Agent workflow"),
        _span("model", trace, "m1", "root", at + 10, first_end, prompt=prompt, ttft=ttft),
        _span("tool", trace, "t1", "root", first_end, tool_end, "lookup"),
        _span("model", trace, "m2", "root", tool_end + 10, second_end, prompt=prompt + 40,
              ttft=ttft),
    ]  # fmt: skip


def test_the_parts_add_up_to_the_wall_clock_and_the_slow_tool_holds_the_agent_back() -> None:
    spans = _turn("a", 0, 300, 800, 50) + _turn("b", 2000, 700, 800, 50)
    run = analyse_agent(spans)
    assert run is not None
    assert run.model_calls == 4 and run.tool_calls == 2 and len(run.turns) == 2
    assert run.model_ms == pytest.approx(2 * (200 + 150))
    assert run.tool_ms == pytest.approx(2 * 800)
    assert run.agent_ms == pytest.approx(2 * 20)
    assert run.model_ms + run.tool_ms + run.agent_ms == pytest.approx(run.wall_ms)
    assert run.holds_back == "tools"
    # Whatever its model calls' diagnosis named, the run's verdict is the time outside them.
    assert run.verdict(Kind.HEALTHY) is Kind.AGENT and run.verdict(Kind.DECODE) is Kind.AGENT
    assert agent_document(run, Kind.DECODE)["verdict"] == "agent"
    assert agent_document(run)["verdict"] is None
    assert [(t.name, t.calls, t.total_ms) for t in run.tools] == [("lookup", 2, 1600.0)]
    assert run.parallel_saving_ms == 0


def test_a_model_call_inside_a_framework_span_counts_as_model_time_once() -> None:
    spans = [
        _span("agent", "a", "root", None, 0, 500),
        _span("call", "a", "gen", "root", 50, 450),
        _span("model", "a", "m", "gen", 100, 400, prompt=100),
    ]
    run = analyse_agent(spans)
    assert run is not None
    assert (run.model_ms, run.tool_ms, run.agent_ms) == (300.0, 0.0, 200.0)
    assert run.holds_back == "model" and run.model_calls == 1
    assert run.verdict(Kind.INPUT_LENGTH) is Kind.INPUT_LENGTH


def test_an_agent_busy_between_its_calls_is_held_back_by_its_own_work() -> None:
    spans = [
        _span("agent", "a", "root", None, 0, 1000),
        _span("model", "a", "m", "root", 100, 300, prompt=100),
    ]
    run = analyse_agent(spans)
    assert run is not None
    assert (run.model_ms, run.agent_ms) == (200.0, 800.0)
    assert run.holds_back == "agent" and run.verdict(Kind.HEALTHY) is Kind.AGENT


def test_tool_calls_of_one_answer_made_in_turn_could_have_run_at_once() -> None:
    spans = [
        _span("agent", "a", "root", None, 0, 1200),
        _span("model", "a", "m1", "root", 0, 100, prompt=100),
        _span("tool", "a", "t1", "root", 100, 400, "lookup"),
        _span("tool", "a", "t2", "root", 400, 900, "search"),
        _span("tool", "a", "t3", "root", 900, 1000, "note"),
        _span("model", "a", "m2", "root", 1000, 1100, prompt=200),
        _span("tool", "a", "t4", "root", 1100, 1200, "lookup"),
    ]
    run = analyse_agent(spans)
    assert run is not None
    # 300 + 500 + 100 one after another: at once, the longest (500) alone.
    assert run.parallel_saving_ms == pytest.approx(400)
    parallel = [*spans[:3], dataclasses.replace(spans[3], start_ns=150 * MS, end_ns=650 * MS)]
    overlapping = analyse_agent(parallel)
    assert overlapping is not None and overlapping.parallel_saving_ms == 0


def test_a_context_growing_a_turn_at_a_time_names_its_cost_and_the_window_saves_it() -> None:
    """Eight turns, the prompt 1,000 tokens longer each, a token costing 0.3 ms of TTFT:
    the window of the last two turns leaves out of turn k's calls (k - 1) x 1,000 tokens."""
    spans = []
    for k in range(8):
        prompt = 1000 * (k + 1)
        spans += _turn(f"t{k}", 10_000 * k, prompt, 300, 20 + 0.3 * prompt)
    run = analyse_agent(spans)
    assert run is not None and run.growth is not None and run.token_cost is not None
    assert run.growth.slope == pytest.approx(1000)
    # Each turn's second call is 40 tokens longer at the same TTFT: a slope a hair under.
    assert run.token_cost.slope == pytest.approx(0.3, rel=1e-3)
    window, reset, prefix = run.remedies
    left_out = 2 * sum(1000 * (k - 1) for k in range(2, 8))
    assert window.name == "window" and window.tokens_left_out == left_out
    assert window.saving_ms == pytest.approx(0.3 * left_out, rel=1e-3)
    assert reset.tokens_left_out == 2 * sum(1000 * k for k in range(1, 8))
    assert run.context_noticeable
    # No call reported a cached prefix: each call could have reused the last one's prompt
    # (second calls: the turn's first, 1,000 (k + 1); first calls: the last turn's second).
    assert prefix.name == "prefix" and run.cached_calls == 0
    assert prefix.tokens_left_out == sum(1000 * (k + 1) for k in range(8)) + sum(
        1000 * k + 40 for k in range(1, 8)
    )
    document = agent_document(run)
    assert document["context"]["remedies"][0]["saving_ms"] == window.saving_ms
    assert document["shares"]["tools"] == pytest.approx(run.tool_ms / run.wall_ms)


def test_no_saving_is_given_where_ttft_did_not_rise_with_the_prompt() -> None:
    spans = []
    for k, ttft in enumerate([60.0, 20.0, 55.0, 25.0]):
        spans += _turn(f"t{k}", 10_000 * k, 1000 * (k + 1), 300, ttft)
    run = analyse_agent(spans)
    assert run is not None and run.token_cost is not None and run.token_cost.low <= 0
    assert all(r.saving_ms is None and r.low_ms is None for r in run.remedies)
    assert not run.context_noticeable


def test_spans_without_a_model_call_are_no_run() -> None:
    assert analyse_agent([_span("tool", "a", "t", None, 0, 10)]) is None


def test_a_provider_that_caches_the_prefix_is_said_and_no_cache_is_offered() -> None:
    spans = []
    for k in range(4):
        spans += _turn(f"t{k}", 10_000 * k, 1000 * (k + 1), 300, 20 + 0.3 * 1000 * (k + 1))
    cached = [
        dataclasses.replace(s, trace=dataclasses.replace(s.trace, cached_prompt_tokens=900))
        if s.trace is not None and s.span_id == "m2"
        else s
        for s in spans
    ]
    run = analyse_agent(cached)
    assert run is not None
    assert (run.cached_calls, run.cached_tokens) == (4, 3600)
    assert run.prompt_tokens == sum(2 * 1000 * (k + 1) + 40 for k in range(4))
    assert [r.name for r in run.remedies] == ["window", "reset"]


def test_the_remedies_are_ranked_by_what_they_save_and_a_tool_only_bounded() -> None:
    spans = []
    for k in range(8):
        prompt = 1000 * (k + 1)
        spans += _turn(f"t{k}", 10_000 * k, prompt, 300, 20 + 0.3 * prompt)
    spans += [
        _span("tool", "t7", "x1", "root", 80_000, 80_200, "search"),
        _span("tool", "t7", "x2", "root", 80_200, 80_300, "search"),
    ]
    run = analyse_agent(spans)
    assert run is not None
    ranked = ranked_remedies(run)
    names = [r.name for r in ranked]
    assert names[-1] == "tool" and ranked[-1].subject == "lookup"
    assert ranked[-1].saving_ms is None and ranked[-1].at_most_ms == pytest.approx(2400)
    savings = [r.saving_ms for r in ranked if r.saving_ms is not None]
    assert savings == sorted(savings, reverse=True)
    assert set(names) == {"prefix", "window", "parallel", "tool"}
    parallel = next(r for r in ranked if r.name == "parallel")
    assert parallel.saving_ms == pytest.approx(100)  # 200 + 100 ms in turn, at once 200
    assert agent_document(run)["remedies"][0]["name"] == names[0]


def test_the_contexts_growth_is_noticeable_by_what_a_reset_saves_not_a_cached_prefix() -> None:
    """Long tools make the run 171 s: the growth (a reset's 16.8 s) is under a tenth of it,
    though a cached prefix would save 19.3 s, over a tenth."""
    spans = []
    for k in range(8):
        prompt = 1000 * (k + 1)
        spans += _turn(f"t{k}", 100_000 * k, prompt, 21_000, 20 + 0.3 * prompt)
    run = analyse_agent(spans)
    assert run is not None
    saving = {r.name: r.saving_ms or 0.0 for r in run.remedies}
    assert saving["reset"] < 0.1 * run.wall_ms < saving["prefix"]
    assert not run.context_noticeable


def test_calls_served_from_the_providers_cache_are_held_against_those_that_were_not() -> None:
    spans = _turn("a", 0, 300, 100, 80) + _turn("b", 1000, 700, 100, 20)
    cached = {"b"}
    spans = [
        dataclasses.replace(
            s,
            trace=dataclasses.replace(
                s.trace, cached_prompt_tokens=256 if s.trace_id in cached else 0
            ),
        )
        if s.trace is not None
        else s
        for s in spans
    ]
    run = analyse_agent(spans)
    assert run is not None
    assert (run.cached_calls, run.cached_tokens) == (2, 512)
    # Each call's TTFT is its wait for the first token (20 or 80 ms) and the 0.15 ms the
    # sample trace spends before it sends.
    assert run.cached_ttft_ms == pytest.approx(20.15)
    assert run.uncached_ttft_ms == pytest.approx(80.15)
    assert agent_document(run)["context"]["cached_ttft_ms_p50"] == run.cached_ttft_ms
    # Where no call said it had none, there is nothing to hold the cached ones against.
    unsaid = [
        dataclasses.replace(s, trace=dataclasses.replace(s.trace, cached_prompt_tokens=None))
        if s.trace is not None and s.trace_id == "a"
        else s
        for s in spans
    ]
    run = analyse_agent(unsaid)
    assert run is not None and run.cached_ttft_ms is None and run.uncached_ttft_ms is None
