"""Recorded traffic sets the typical request from its own lengths: where the user told no
``--prompt-tokens``, the verdict is for a request of the recorded requests' median prompt
(the server's counts); a prompt the user tells wins, and is kept with the run.

Hand-built traces kept in a store on disk and diagnosed as ``latdoc diagnose --from-run``
would: no sockets."""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from latdoc import Priorities, Store, diagnose_traffic, parse_priorities, rediagnose
from latdoc.analysis.traffic import recorded_prompt_tokens
from latdoc.model import Scenario
from latdoc.probe import dialects
from latdoc.records import RequestTrace, Sample, Step
from latdoc.report import diagnosis_to_dict, make_console, render_diagnosis
from latdoc.store import diagnosis_from_record, diagnosis_to_record
from report_samples import make_trace

LENGTHS = (200,) * 4 + (800,) * 6 + (3200,) * 3
"""The server's prompt counts: 13 requests, median 800 (the six of one length let the
noticeable bar be read)."""


PER_TOKEN_MS = 0.15
"""The prefill's cost of a prompt token: 2.4× the reference profile's slow edge, so what it
adds past healthy is too little to notice at 800 tokens (+90 ms of growth, 53 ms past
healthy, of a request of 1.49 s) and noticeable at 3,200 (+450 ms, 264 ms past, of
1.85 s)."""


def _recorded(tokens: int | None, i: int, *, estimated: int | None = None) -> Sample:
    prefill = 40.0 + PER_TOKEN_MS * (tokens or estimated or 0)
    trace = make_trace(dns=None, connect=None, tls=None, wait=prefill, prompt_tokens=tokens)
    trace = replace(
        trace,
        dialect="chat",
        started_at=trace.started_at + timedelta(seconds=5 * i),
        prompt_tokens_estimated=estimated,
    )
    return Sample(Step.TRAFFIC, trace, index=i)


def _traffic() -> list[Sample]:
    samples = [_recorded(n, i) for i, n in enumerate(LENGTHS)]
    return [*samples, _recorded(None, len(samples), estimated=9000)]


def _keep(store: Store, samples: list[Sample]) -> str:
    run_id = store.new_run(
        endpoint="https://api.example.com/v1",
        model="qwen2.5-7b-instruct",
        scenario=Scenario.CHAT,
        meta={},
        kind="instrument",
    )
    store.add_samples(run_id, samples)
    store.finish_run(run_id, status="recorded", diagnosis=None)
    return run_id


def _trace(tokens: int | None, dialect: str) -> RequestTrace:
    return replace(make_trace(prompt_tokens=tokens), dialect=dialect)


def test_the_recorded_prompt_is_the_median_of_the_servers_counts() -> None:
    names = dialects.names()
    assert recorded_prompt_tokens(_traffic(), names) == 800
    two = [Sample(Step.TRAFFIC, _trace(n, "chat")) for n in (100, 301)]
    assert recorded_prompt_tokens(two, names) == 200, "the median of an even count, rounded"
    others = [
        Sample(Step.TRAFFIC, _trace(None, "chat")),
        Sample(Step.TRAFFIC, _trace(5000, "http")),
        Sample(Step.NETWORK, _trace(5000, "chat")),
    ]
    assert recorded_prompt_tokens(others, names) is None
    assert recorded_prompt_tokens([], names) is None


def test_recorded_traffic_is_diagnosed_at_its_median_prompt_unless_one_is_told(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "r.db") as store:
        run_id = _keep(store, _traffic())
        recorded = diagnose_traffic(store, run_id).diagnosis
        told = diagnose_traffic(store, run_id, prompt_tokens=3200).diagnosis
        again = rediagnose(store, run_id).diagnosis
        info = store.run_info(run_id)
    w, check = recorded.workload, recorded.length_check
    assert w is not None and check is not None
    assert w.prompt_tokens == check.long_tokens == 800
    assert w.source == "recorded" and not w.told and w.growth_ms > 0
    assert recorded.longer_prompt is not None and recorded.longer_prompt.prompt_tokens == 3200
    out = io.StringIO()
    make_console(out, width=300).print(render_diagnosis(recorded))
    text = " ".join(out.getvalue().split())
    assert "Shares are of a typical request of 800 prompt tokens" in text
    assert "your recorded requests' median prompt: --prompt-tokens N for another" in text
    assert "the seed's long prompt" not in text

    assert info.meta["prompt_tokens"] == 3200, "kept with the run for `latdoc report`"
    for mine in (told, again):
        assert mine.workload is not None and mine.length_check is not None
        assert mine.workload.prompt_tokens == mine.length_check.long_tokens == 3200
        assert mine.workload.source == "told" and mine.workload.told
        assert mine.longer_prompt is None


def test_the_workloads_source_survives_the_document_and_the_store(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        recorded = diagnose_traffic(store, _keep(store, _traffic())).diagnosis
    doc = diagnosis_to_dict(recorded)
    assert doc["workload"]["source"] == "recorded" and doc["workload"]["told"] is False
    back = diagnosis_from_record(diagnosis_to_record(recorded))
    assert back.workload is not None and back.workload.source == "recorded"
    before = {k: v for k, v in doc["workload"].items() if k != "source"}
    for told, source in ((False, "seed"), (True, "told")):
        old = diagnosis_from_record({**doc, "workload": {**before, "told": told}}).workload
        assert old is not None and old.source == source, "a document from before `source`"


def test_a_median_at_the_shortest_length_still_names_the_longer_prompt(tmp_path: Path) -> None:
    short = (200,) * 6 + (800,) * 2 + (3200,) * 2
    with Store(tmp_path / "r.db") as store:
        run_id = _keep(store, [_recorded(n, i) for i, n in enumerate(short)])
        d = diagnose_traffic(store, run_id).diagnosis
    assert d.workload is not None and d.workload.prompt_tokens == 200
    assert d.workload.source == "recorded" and d.length_check is None
    assert d.longer_prompt is not None and d.longer_prompt.prompt_tokens == 3200


def test_priorities_told_for_recorded_traffic_are_kept_with_the_run(tmp_path: Path) -> None:
    told = parse_priorities("quality,latency,cost")
    with Store(tmp_path / "r.db") as store:
        run_id = _keep(store, _traffic())
        chat = diagnose_traffic(store, run_id, prompt_tokens=3200).diagnosis
        ranked = diagnose_traffic(store, run_id, priorities=told).diagnosis
        again = rediagnose(store, run_id).diagnosis
        info = store.run_info(run_id)
    assert chat.priorities == Priorities.preset(Scenario.CHAT)
    assert ranked.priorities == again.priorities == told
    assert info.meta["priorities"] == "quality,latency,cost", "kept for `latdoc report`"
    keys = [r.key for r in ranked.remedies]
    assert keys == [r.key for r in again.remedies]
    assert keys[0] == "prompt_cache" != chat.remedies[0].key  # answers unchanged first
    assert ranked.verdict == chat.verdict and ranked.shares_ms == chat.shares_ms
