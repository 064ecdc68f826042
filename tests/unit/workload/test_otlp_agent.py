"""An agent's spans, as the OpenAI Agents SDK writes them through OpenInference's
openai-agents and openai instrumentations: each model call once (the framework's span
holds the client's), its tool spans never read as model calls, and the tree kept.

``tests/data/otlp_openai_agents.jsonl`` was written by the real packages:
``python tests/otlp_agent.py BASE_URL OUT --turns 3 --words 20 --tool-s 0.2`` against
``latdoc lab serve --answer-tokens 8``."""

from __future__ import annotations

import json
from collections import Counter

from latdoc.features.agent import analyse_agent
from latdoc.features.agent.run import spans_from_meta, spans_to_meta
from latdoc.records import Sample, Step
from latdoc.workload.otlp import read_otlp_file
from paths import DATA

AGENTS = DATA / "otlp_openai_agents.jsonl"


def test_each_model_call_is_read_once_from_the_span_nearer_the_wire() -> None:
    traffic = read_otlp_file(AGENTS)
    assert len(traffic.traces) == 6
    assert traffic.instrumentation.startswith("OpenInference 0.1")  # the openai client's
    assert any("6 model calls were recorded twice" in note.text for note in traffic.notes)
    assert all(t.ttft_ms is not None for t in traffic.traces)


def test_the_tree_keeps_every_span_with_its_role() -> None:
    traffic = read_otlp_file(AGENTS)
    roles = Counter(span.role for span in traffic.agent)
    assert roles["model"] == 6 and roles["call"] == 6 and roles["tool"] == 3
    assert roles["agent"] == 6  # each turn's workflow and the agent within it
    assert {span.name for span in traffic.agent if span.role == "tool"} == {"lookup"}
    models = [span for span in traffic.agent if span.role == "model"]
    assert sorted((s.trace for s in models), key=id) == sorted(traffic.traces, key=id)
    ids = {(span.trace_id, span.span_id) for span in traffic.agent}
    assert all(
        span.parent_id is None or (span.trace_id, span.parent_id) in ids for span in traffic.agent
    )


def test_the_run_from_the_real_spans_adds_up() -> None:
    run = analyse_agent(read_otlp_file(AGENTS).agent)
    assert run is not None
    assert (len(run.turns), run.model_calls, run.tool_calls) == (3, 6, 3)
    assert run.model_ms + run.tool_ms + run.agent_ms == run.wall_ms
    # Each lookup slept 0.2 s.
    assert all(190 < turn.tool_ms < 400 for turn in run.turns)
    prompts = [turn.prompt_tokens for turn in run.turns]
    assert prompts == sorted(prompts) and prompts[0] is not None and prompts[0] < prompts[-1]


def test_the_tree_kept_in_a_runs_meta_reads_back_as_the_same_run() -> None:
    traffic = read_otlp_file(AGENTS)
    kept = spans_to_meta(traffic.agent, traffic.traces)
    samples = [Sample(Step.TRAFFIC, t, index=i) for i, t in enumerate(traffic.traces)]
    again = spans_from_meta([*json.loads(json.dumps(kept)), "not a span"], samples)
    assert again == list(traffic.agent)
    assert analyse_agent(again) == analyse_agent(traffic.agent)
