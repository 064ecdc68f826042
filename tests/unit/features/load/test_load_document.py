"""A load run keeps its analysis as a versioned record, apart from the printed JSON, and
reads it back; runs kept by earlier versions, which hold the printed document, still
open and report the same."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from latdoc import Sample, Step
from latdoc.errors import UsageError
from latdoc.features.load import (
    LOAD_RECORD_SCHEMA,
    LevelWindow,
    LoadAnalysis,
    Slo,
    load_from_record,
    load_to_dict,
    load_to_record,
    reload_load,
)
from latdoc.features.load.analysis import ClientLoad, Failure, analyse_load
from latdoc.store import Store
from report_samples import make_trace

SECOND = 10**9


def _sweep() -> tuple[list[LevelWindow], list[Sample], LoadAnalysis]:
    """Two closed-loop levels of traces, the second slower, its client measured."""
    samples: list[Sample] = []
    windows: list[LevelWindow] = []
    for number, streams, wait in ((1, 1, 200.0), (2, 4, 900.0)):
        start = (number - 1) * 10 * SECOND
        trace = make_trace(dns=None, connect=None, tls=None, wait=wait, stream=400.0)
        samples += [
            Sample(
                Step.LOAD,
                dataclasses.replace(trace, t0_ns=start + k * SECOND // streams),
                target_prompt_tokens=128,
                concurrency=streams,
                index=len(samples) + k,
            )
            for k in range(8 * streams)
        ]
        client = ClientLoad(0.4, 1.5, None, 1, 0.02) if number == 2 else None
        windows.append(LevelWindow(number, streams, None, start, start + 10 * SECOND,
                                   client=client))  # fmt: skip
    analysis = analyse_load(windows, samples, Slo(ttft_ms=800.0))
    second = dataclasses.replace(
        analysis.levels[1], failures=(Failure("http:503", "wait", 2),), failed=2
    )
    analysis = dataclasses.replace(
        analysis, levels=(analysis.levels[0], second), knee=second, plateau=second
    )
    return windows, samples, analysis


def test_the_record_reads_back_the_analysis_it_was_written_from() -> None:
    _, _, analysis = _sweep()
    record = json.loads(json.dumps(load_to_record(analysis)))
    assert record["schema"] == LOAD_RECORD_SCHEMA == "latdoc.load_record/1"
    assert record["knee"] == record["plateau"] == 2
    assert "findings" not in record and "notes" not in record
    assert load_from_record(record) == analysis


def test_the_printed_form_earlier_versions_stored_reads_back_too() -> None:
    _, _, analysis = _sweep()
    printed = json.loads(json.dumps(load_to_dict(analysis, run_id="r")))
    assert load_from_record(printed) == analysis
    assert load_from_record({k: v for k, v in printed.items() if k != "schema"}) == analysis


def test_an_open_loop_level_keeps_the_arrivals_it_never_sent_and_earlier_records_read_none() -> (
    None
):
    _, samples, _ = _sweep()
    window = LevelWindow(1, None, 2.0, 0, 10 * SECOND, scheduled=21, late_ms_p50=3.0, unsent=2)
    analysis = analyse_load([window], [dataclasses.replace(s, step=Step.ARRIVALS, concurrency=1)
                                       for s in samples[:8]], Slo())  # fmt: skip
    record = json.loads(json.dumps(load_to_record(analysis)))
    assert record["levels"][0]["window"]["unsent"] == 2
    assert load_from_record(record) == analysis
    del record["levels"][0]["window"]["unsent"]
    assert load_from_record(record).levels[0].window.unsent == 0


def test_a_document_of_another_version_is_named() -> None:
    with pytest.raises(UsageError, match=r"latdoc\.load_record/9"):
        load_from_record({"schema": "latdoc.load_record/9", "levels": []})


@pytest.mark.parametrize("form", ["record", "printed"])
def test_a_stored_run_reports_the_same_whichever_form_it_holds(form: str, tmp_path: Path) -> None:
    windows, samples, _ = _sweep()
    analysis = analyse_load(windows, samples, Slo(ttft_ms=800.0))
    stored = load_to_record(analysis) if form == "record" else load_to_dict(analysis)
    with Store(tmp_path / "runs.db") as store:
        meta = {"load": {"slo": {"ttft_ms": 800.0, "tpot_ms": None}}}
        run_id = store.new_run(endpoint="http://e", model="m", scenario="", meta=meta,
                               kind="load")  # fmt: skip
        store.add_samples(run_id, samples)
        store.finish_run(run_id, status="done", diagnosis=stored)
        again = reload_load(store, run_id)
    assert again.analysis == analysis
    assert json.dumps(load_to_dict(again.analysis, run_id=run_id)) == json.dumps(
        load_to_dict(analysis, run_id=run_id)
    )
