"""What a run records about itself comes back as its context, so ``latdoc report`` diagnoses
it as it was diagnosed: here, the priorities its remedies are ranked for."""

from __future__ import annotations

import json

from latdoc import DiagnosisPlan, Endpoint, Priorities, Scenario, parse_priorities
from latdoc.pipeline import run_context, run_meta

PLAN = DiagnosisPlan(Endpoint("http://127.0.0.1:9/v1", "m"))


def test_the_priorities_told_are_kept_and_read_back() -> None:
    told = parse_priorities("quality=1,latency=0.5,cost=0")
    meta = json.loads(json.dumps(run_meta(PLAN, 4, priorities=told)))
    context = run_context("r", "http://127.0.0.1:9/v1", "m", Scenario.BATCH, meta, ())
    assert context.priorities == told
    assert context.ranked_for == told


def test_without_priorities_a_run_is_ranked_for_its_scenario() -> None:
    meta = json.loads(json.dumps(run_meta(PLAN, 4)))
    assert meta["priorities"] is None
    context = run_context("r", "http://127.0.0.1:9/v1", "m", Scenario.LONGDOC, meta, ())
    assert context.priorities is None
    assert context.ranked_for == Priorities.preset(Scenario.LONGDOC)
    older = {k: v for k, v in meta.items() if k != "priorities"}
    assert run_context("r", "u", "m", Scenario.CHAT, older, ()).priorities is None
