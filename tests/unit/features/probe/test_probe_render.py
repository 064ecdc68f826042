"""What ``latdoc probe`` shows of a series, and whether a series failed, from traces with
known phases."""

from __future__ import annotations

from latdoc import ProbeRun, StoredProbe, render_summary, render_text, render_waterfall
from latdoc.analysis.repeats import summarize
from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.features.probe import render_probe
from latdoc.workload import TokenCalibration
from report_samples import make_trace, with_error


def test_one_probe_is_its_waterfall() -> None:
    trace = make_trace()
    shown = render_text(render_probe(ProbeRun((trace,))), 120)
    assert shown == render_text(render_waterfall(trace), 120)


def test_a_series_adds_how_the_prompt_was_calibrated_and_its_summary() -> None:
    traces = (make_trace(), make_trace(dns=None, connect=None, tls=None))
    calibration = TokenCalibration(overhead=9.0, per_word=1.25, measured=True)
    shown = render_text(render_probe(ProbeRun(traces, calibration)), 120)
    assert shown.startswith(render_text(render_waterfall(traces[0]), 120))
    assert "Prompt length calibrated on the endpoint's usage: 9 + 1.25 tokens per word." in shown
    assert shown.endswith(render_text(render_summary(summarize(traces)), 120))


def test_a_series_failed_when_one_of_its_probes_did() -> None:
    ok = make_trace()
    refused = with_error(ok, TraceError(ErrorKind.CONNECT, Phase.CONNECT, "refused"))
    assert not StoredProbe("r", ProbeRun((ok, ok)), "s.db").any_failed
    assert StoredProbe("r", ProbeRun((ok, refused)), "s.db").any_failed
