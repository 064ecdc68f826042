"""An agent's spans, as the OpenAI Agents SDK writes them through OpenInference's
openai-agents and openai instrumentations: each model call once (the framework's span
holds the client's), its tool spans never read as model calls, and the tree kept.

``tests/data/otlp_openai_agents.jsonl`` was written by the real packages:
``python tests/otlp_agent.py BASE_URL OUT --turns 3 --words 20 --tool-s 0.2`` against
``latdoc lab serve --answer-tokens 8``."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Any

from latdoc.features.agent import analyse_agent
from latdoc.features.agent.run import spans_from_meta, spans_to_meta
from latdoc.records import Sample, Step
from latdoc.workload.otlp import read_otlp, read_otlp_file
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
    shown = {"tool", "agent", "model"}
    assert again == [
        s if s.role in shown else dataclasses.replace(s, name="") for s in traffic.agent
    ]
    assert analyse_agent(again) == analyse_agent(traffic.agent)


def _span(own: str, parent: str | None, start_ms: int, end_ms: int, **attributes: Any) -> Any:
    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, str):
            return {"stringValue": v}
        return {"doubleValue": v} if isinstance(v, float) else {"intValue": str(v)}

    span = {
        "traceId": "ab" * 16,
        "spanId": own * 8,
        "name": str(attributes.get("gen_ai.operation.name", "step")),
        "startTimeUnixNano": str(1_800_000_000_000_000_000 + start_ms * 1_000_000),
        "endTimeUnixNano": str(1_800_000_000_000_000_000 + end_ms * 1_000_000),
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
    }
    if parent is not None:
        span["parentSpanId"] = parent * 8
    return span


def test_the_conventions_agent_and_tool_spans_and_latdocs_tool_call_attribute() -> None:
    """An ``invoke_agent`` span holding a ``chat`` and an ``execute_tool`` span, in the
    GenAI conventions: one model call (its first tool call read from latdoc's attribute),
    the tool never a call."""
    spans = [
        _span("a", None, 0, 1000, **{"gen_ai.operation.name": "invoke_agent"}),
        _span(
            "c",
            "a",
            10,
            400,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "latdoc.ttft_ms": 120.0,
                "latdoc.first_tool_call_ms": 130.0,
            },
        ),
        _span(
            "t",
            "a",
            400,
            900,
            **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
        ),
    ]
    document = {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    traffic = read_otlp(json.dumps(document))
    (call,) = traffic.traces
    assert call.first_tool_call_ns == 130_000_000 and call.ttft_ms == 120.0
    assert [s.role for s in traffic.agent] == ["agent", "model", "tool"]
    run = analyse_agent(traffic.agent)
    assert run is not None and (run.model_ms, run.tool_ms, run.agent_ms) == (390.0, 500.0, 110.0)
