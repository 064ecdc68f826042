"""A user's own reference of healthy (``diagnose --reference FILE``): it decides the
verdict, is kept with the run so a second diagnosis and ``latdoc report`` say the same,
and the report names it. Recorded traffic kept in a store on disk: no sockets."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from latdoc import Kind, Store, diagnose_traffic, load_reference, rediagnose
from latdoc.cli import EXIT_OK, EXIT_USAGE, main
from latdoc.records import Sample
from latdoc.report import diagnosis_to_dict, make_console, render_diagnosis
from latdoc.store import diagnosis_from_record, diagnosis_to_record
from report_samples import make_trace
from unit.analysis.test_recorded_workload import _keep, _traffic

FLEET = "[profile]\nname = 'our fleet'\n\n[quantity.tpot_ms]\nslow_edge = 5.0\ntypical = 3.0\n"
"""A fleet that decodes a token in 5 ms at worst: the recorded requests' ~12 ms is slow."""


def test_a_users_reference_decides_the_verdict_and_is_kept_with_the_run(
    tmp_path: Path,
) -> None:
    told = tmp_path / "fleet.toml"
    told.write_text(FLEET)
    with Store(tmp_path / "r.db") as store:
        run_id = _keep(store, _traffic())
        shipped = diagnose_traffic(store, run_id).diagnosis
        ours = diagnose_traffic(store, run_id, reference=load_reference(told)).diagnosis
        again = rediagnose(store, run_id).diagnosis
    assert shipped.verdict.primary is Kind.HEALTHY and shipped.reference is None
    assert ours.verdict.primary is Kind.DECODE
    assert ours.reference == ("our fleet", str(told))
    (decode,) = [f for f in ours.findings if f.kind is Kind.DECODE]
    tpot, tokens = decode.evidence["tpot_ms"], decode.evidence["output_tokens"]
    assert decode.excess_ms == pytest.approx((tpot - 5.0) * (tokens - 1))
    assert decode.share_ms == pytest.approx(tpot * (tokens - 1))
    assert "past the slow edge of healthy, 5.0 ms" in decode.rule
    # Kept with the run: diagnosed again without being told, the verdict is the same.
    assert again.verdict == ours.verdict and again.reference == ours.reference

    out = io.StringIO()
    make_console(out, width=200).print(render_diagnosis(ours))
    assert f"healthy is your reference: our fleet ({told})" in out.getvalue()
    doc = diagnosis_to_dict(ours)
    assert doc["reference"] == {"name": "our fleet", "origin": str(told)}
    assert diagnosis_to_dict(shipped)["reference"] is None
    assert diagnosis_from_record(diagnosis_to_record(ours)).reference == ours.reference


def test_the_command_line_takes_the_file_and_refuses_one_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    with Store(db) as store:
        run_id = _keep(store, _traffic())
    told = tmp_path / "fleet.toml"
    told.write_text(FLEET)
    args = ["diagnose", "--from-run", run_id, "--db", str(db), "--json"]
    assert main([*args, "--reference", str(told)]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["primary"] == "decode" and doc["reference"]["name"] == "our fleet"

    bad = tmp_path / "bad.toml"
    bad.write_text("[quantity.tpot_ms]\ntypical = 40.0\n")
    assert main([*args, "--reference", str(bad)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "typical 40.0 lies past its slow edge 30.2" in err and "Traceback" not in err


def _faster(samples: list[Sample]) -> list[Sample]:
    """The same traffic from an endpoint that streams its answers three times as fast."""
    out = []
    for s in samples:
        t = s.trace
        wait = (t.first_byte_ns - t.sent_ns) / 1e6 if t.first_byte_ns and t.sent_ns else 40.0
        quick = make_trace(dns=None, connect=None, tls=None, wait=wait, stream=400.0,
                           prompt_tokens=t.prompt_tokens)  # fmt: skip
        kept = replace(
            quick,
            dialect="chat",
            started_at=t.started_at,
            prompt_tokens_estimated=t.prompt_tokens_estimated,
        )
        out.append(replace(s, trace=kept))
    return out


def test_another_runs_measurements_are_the_reference_when_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    with Store(db) as store:
        reference = _keep(store, _faster(_traffic()))
        run_id = _keep(store, _traffic())
    args = ["diagnose", "--from-run", run_id, "--db", str(db), "--json"]
    assert main([*args, "--reference-run", reference]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    # ~12 ms a token is healthy by the profile, slow against a run streaming at ~4.
    assert doc["verdict"]["primary"] == "decode"
    assert doc["reference"] == {"name": f"run {reference}", "origin": f"run {reference}"}
    (decode,) = [f for f in doc["findings"] if f["kind"] == "decode"]
    assert 0 < decode["excess_ms"] < decode["share_ms"]
    # Kept with the run: the report says the same without being told again.
    assert main(["report", run_id, "--db", str(db)]) == EXIT_OK
    text = " ".join(capsys.readouterr().out.split())
    assert f"healthy is your reference: run {reference}; against it, decode adds" in text

    told = tmp_path / "fleet.toml"
    told.write_text(FLEET)
    assert main([*args, "--reference-run", reference, "--reference", str(told)]) == EXIT_USAGE
    assert "give one" in capsys.readouterr().err
    assert main([*args, "--reference-run", "no-such-run"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "no-such-run" in err and "Traceback" not in err
