"""The store keeps a diagnosis as the ``latdoc.diagnosis/2`` document, through its own codec,
and reads one back, from this version and from older ones."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from latdoc import (
    Diagnosis,
    Kind,
    RunContext,
    Store,
    SystemItem,
    build_diagnosis,
    diagnosis_to_dict,
    parse_priorities,
)
from latdoc.advice import with_remedies
from latdoc.model import (
    Disagreement,
    LengthCheck,
    NetworkCheck,
    NoticeableBar,
    RequestParts,
    ServerAccount,
)
from latdoc.report import diagnosis_to_dict as report_diagnosis_to_dict
from latdoc.store import diagnosis_from_record, diagnosis_to_record
from report_samples import make_diagnosis, run_samples

DERIVED = ("ratio_long_short", "total_ms")


"""Numbers the records compute from the parts the document holds rounded, or from each
length's fastest request, which it does not hold."""


def _json(document: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(document))
    return loaded


def _without_derived(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_derived(v) for k, v in value.items() if k not in DERIVED}
    if isinstance(value, list):
        return [_without_derived(v) for v in value]
    return value


def _full() -> Diagnosis:
    """A diagnosis with every part the document has, a retry wait in seconds among its
    evidence (written with an ``_ms`` twin) and a server that told its timing."""
    d = make_diagnosis()
    errors = replace(
        d.findings[1], kind=Kind.ERRORS, evidence={"failed": 3.0, "retry_after_s": 2.5}
    )
    return replace(
        d,
        findings=(d.findings[0], errors),
        verdict=replace(
            d.verdict,
            negligible=(Kind.DECODE,),
            rule_confidence=0.72,
            confidence_model="bank-test",
            bank_accuracy=0.953,
            bank_n=412,
        ),
        length_check=LengthCheck(128, 337.0, 2048, 2124.5, 6.3, 1787.5, 40.0, True, True, "fired"),
        network_check=NetworkCheck(
            77.0, 802.5, 200.0, 3.0, "model service", "the model service", "no pair"
        ),
        noticeable=NoticeableBar(2400.0, 35.0, 0.05, 12.5),
        typical_request=RequestParts(77.0, 2.5, 380.0, 1200.0, 4, 0.0, 12.0),
        system=(
            SystemItem(
                "http2", "HTTP/2 (h2)", None, "h2 installed", False, "why", "pip", (Kind.CLIENT,)
            ),
        ),
        server=ServerAccount(
            "Server-Timing",
            {"requests": 12.0, "prefill_ms": 301.5},
            (Disagreement("the server says more", 2, 12, 14.0),),
            {"prefill_total_ms": 3000.0},
            "llama.cpp /metrics",
        ),
        reasoning={"reasoning_ms": 120.0, "reasoning_tokens": None},
    )


def test_the_store_and_the_report_write_one_document() -> None:
    d = _full()
    assert diagnosis_to_record(d) == diagnosis_to_dict(d) == report_diagnosis_to_dict(d)


def test_a_diagnosis_comes_back_from_its_document() -> None:
    d = _full()
    back = diagnosis_from_record(_json(diagnosis_to_record(d)))
    assert back.verdict == d.verdict
    assert back.findings == d.findings  # the ``retry_after_ms`` twin is not evidence
    assert back.remedies == d.remedies
    assert back.shares_ms == d.shares_ms
    assert back.network == d.network and back.load == d.load
    assert back.notes == d.notes and back.reasoning == d.reasoning
    assert back.length is not None and d.length is not None
    assert back.length.points == d.length.points
    assert back.length.predict_ms(4096) == pytest.approx(d.length.predict_ms(4096))
    assert back.length_check == d.length_check and back.noticeable == d.noticeable
    assert back.network_check == d.network_check
    assert back.typical_request == d.typical_request
    assert back.system == d.system and back.server == d.server


def test_a_real_diagnosis_writes_the_same_document_after_a_round_trip() -> None:
    d = build_diagnosis(run_samples(), RunContext("r", "https://x/v1", "m", cpu_count=2))
    assert d.noticeable is not None and d.typical_request is not None
    document = _json(diagnosis_to_record(d))
    again = _json(diagnosis_to_record(diagnosis_from_record(document)))
    assert _without_derived(again) == _without_derived(document)
    total = document["typical_request"]["total_ms"]
    assert again["typical_request"]["total_ms"] == pytest.approx(total, abs=0.005)


def test_the_priorities_and_each_remedys_effects_come_back() -> None:
    told = RunContext(
        "r", "https://x/v1", "m", priorities=parse_priorities("cost=2,latency=1,quality=0")
    )
    d = with_remedies(make_diagnosis(), told)
    assert d.remedies and all(r.effects is not None for r in d.remedies)
    back = diagnosis_from_record(_json(diagnosis_to_record(d)))
    assert back.remedies == d.remedies
    assert back.priorities == d.priorities == told.priorities
    older = _json(diagnosis_to_record(d))
    del older["priorities"]
    for remedy in older["remedies"]:
        del remedy["effects"]
    back = diagnosis_from_record(older)
    assert back.priorities is None and all(r.effects is None for r in back.remedies)


def test_a_stored_diagnosis_loads_as_written(tmp_path: Path) -> None:
    d = _full()
    with Store(tmp_path / "s.db") as store:
        run_id = store.new_run(endpoint=d.endpoint, model=d.model, scenario="chat", meta={})
        store.finish_run(run_id, status="done", diagnosis=diagnosis_to_record(d))
        _, _, stored = store.load_run(run_id)
    assert stored == _json(diagnosis_to_dict(d))
    assert diagnosis_from_record(stored).verdict.primary is Kind.INPUT_LENGTH


def test_a_document_of_an_older_version_reads_without_the_keys_added_since() -> None:
    document = _json(diagnosis_to_record(make_diagnosis()))
    for key in ("negligible", "typical_request", "system", "server"):
        del document[key]
    for key in ("negligible", "rule_confidence", "confidence_model", "bank_accuracy"):
        del document["verdict"][key]
    del document["steps"]["reasoning"]
    del document["steps"]["network_rule"]
    del document["steps"]["length"]["rule"]
    del document["steps"]["length"]["tokens_estimated"]
    for remedy in document["remedies"]:
        for key in ("gain_interval_ms", "gain_source", "verify_command", "how_to_measure"):
            del remedy[key]
    d = diagnosis_from_record(document)
    assert d.verdict.negligible == () and d.noticeable is None and d.typical_request is None
    # Before confidence was calibrated, a verdict held the rule's own confidence alone.
    assert d.verdict.confidence == make_diagnosis().verdict.confidence
    v = d.verdict
    assert v.rule_confidence is None and v.confidence_model is None
    assert v.bank_accuracy is None and v.bank_n is None
    assert d.system == () and d.server is None and d.reasoning == {} and d.length_check is None
    assert d.network_check is None
    assert d.length is not None and not d.length.tokens_estimated
    # An old version printed gains it had not measured: they read as no gain.
    assert [r.predicted_gain_ms for r in d.remedies] == [None, None, None]
    assert [r.key for r in d.remedies] == [r.key for r in make_diagnosis().remedies]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": "latdoc.diagnosis/9"}, "schema"),
        ({"verdict": {"primary": "slow", "contributing": [], "confidence": 1}}, "'slow'"),
        ({"requests": "31"}, r"diagnosis\.requests"),
        ({"findings": [{"kind": "decode"}]}, r"findings\[\]: missing"),
    ],
)
def test_a_bad_document_is_refused_by_field(change: dict[str, Any], message: str) -> None:
    document = {**_json(diagnosis_to_record(make_diagnosis())), **change}
    with pytest.raises(ValueError, match=message):
        diagnosis_from_record(document)


def test_a_length_curve_of_estimated_tokens_comes_back_estimated() -> None:
    d = _full()
    assert d.length is not None
    estimated = dataclasses.replace(d, length=dataclasses.replace(d.length, tokens_estimated=True))
    back = diagnosis_from_record(_json(diagnosis_to_record(estimated)))
    assert back.length is not None and back.length.tokens_estimated
