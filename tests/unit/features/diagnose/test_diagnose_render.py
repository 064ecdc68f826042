"""What ``latdoc diagnose`` shows of a run: the plan said first, the document with the
traffic's source, the terminal blocks and the page, from a diagnosis with known numbers."""

from __future__ import annotations

from dataclasses import replace

from latdoc import DiagnosisPlan, Endpoint, diagnosis_to_dict, render_text
from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.features.diagnose import (
    DiagnosisRun,
    diagnosis_blocks,
    diagnosis_document,
    diagnosis_page,
    plan_line,
)
from latdoc.report import render_diagnosis
from report_samples import ENDPOINT, make_diagnosis, run_samples, with_error

SPANS = {"kind": "otlp", "recorded_by": "OpenLLMetry 2.1", "file": "spans.json"}


def _run(source: dict[str, str] | None = None) -> DiagnosisRun:
    samples = tuple(run_samples())
    return DiagnosisRun("r1", make_diagnosis(), samples, "done", "s.db", source=source)


def test_the_plan_says_what_the_run_may_spend_before_anything_is_sent() -> None:
    plan = DiagnosisPlan(endpoint=Endpoint(ENDPOINT, "m"), max_requests=40, concurrency=4)
    line = plan_line(plan)
    assert line.startswith("Plan: at most ")
    assert "then 4 at once" in line
    assert f"{plan.max_seconds:g} s" in line


def test_the_document_is_the_diagnosis_with_the_traffic_source_when_recorded() -> None:
    assert diagnosis_document(_run()) == diagnosis_to_dict(make_diagnosis())
    recorded = diagnosis_document(_run(SPANS))
    assert recorded["traffic_source"] == SPANS
    assert {k: v for k, v in recorded.items() if k != "traffic_source"} == diagnosis_to_dict(
        make_diagnosis()
    )


def test_recorded_traffic_names_what_recorded_it_above_the_diagnosis() -> None:
    measured, recorded = diagnosis_blocks(_run()), diagnosis_blocks(_run(SPANS))
    assert len(measured) == 1
    assert render_text(measured[0], 120) == render_text(render_diagnosis(make_diagnosis()), 120)
    assert render_text(recorded[0], 120).strip() == (
        "Traffic recorded by OpenLLMetry 2.1, read from spans.json"
    )


def test_a_run_whose_every_measured_request_failed_says_so() -> None:
    refused = TraceError(ErrorKind.CONNECT, Phase.CONNECT, "refused")
    failed = tuple(replace(s, trace=with_error(s.trace, refused)) for s in run_samples())
    assert not _run().all_failed
    assert DiagnosisRun("r", make_diagnosis(), failed, "done", "s.db").all_failed


def test_the_page_is_one_self_contained_document() -> None:
    page = diagnosis_page(_run())
    assert page.lstrip().lower().startswith("<!doctype html>")
