"""A diagnosis as the store keeps it: the ``latdoc.diagnosis/2`` document, and back.

:func:`diagnosis_to_record` writes the document :mod:`latdoc.model.document` defines
(the one ``diagnose --json`` prints too), so storing a diagnosis needs no renderer.
:func:`diagnosis_from_record` reads it back as a :class:`~latdoc.model.Diagnosis`,
from this version's documents and from older ones, which lack keys added since
(``negligible``, ``typical_request``, a remedy's gain source and effects, ``system``,
``server``, the reasoning step, the network rule, the priorities, the cost): those read as
absent; a workload without its ``source`` reads it from ``told`` (told, else the seed's
prompt).

The document is a summary, not the run: the length curve's bootstrap draws and each
length's requests are not in it, so a diagnosis read back has no intervals around
the curve, and numbers the records derive (the curve's long/short ratio, a request's
total, the noticeable bar) are computed again from the rounded parts the document
holds. A gain an old version printed without its source reads as no gain: latdoc no
longer prints a gain it did not measure or model. The run's traces are the record:
``latdoc report`` diagnoses them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast, get_args

from latdoc.model import (
    DIAGNOSIS_SCHEMA,
    Corner,
    CostChange,
    CostSummary,
    Diagnosis,
    Disagreement,
    Effects,
    Finding,
    GainSource,
    Kind,
    LengthCheck,
    LengthCurve,
    LengthPoint,
    LongerPrompt,
    NetworkBottleneck,
    NetworkCheck,
    NoticeableBar,
    Priorities,
    PromptSource,
    QualityRisk,
    Remedy,
    RequestParts,
    Scenario,
    ServerAccount,
    SystemItem,
    Verdict,
    Workload,
    diagnosis_to_dict,
    price_from_dict,
)
from latdoc.model.document import without_ms_twins
from latdoc.store._fields import Fields
from latdoc.store.run import notes_from_data

__all__ = ["diagnosis_from_record", "diagnosis_to_record"]

_GAIN_SOURCES = get_args(GainSource)
_BOTTLENECKS = get_args(NetworkBottleneck)
_PROMPT_SOURCES = get_args(PromptSource)
_SERVER_KEYS = frozenset({"source", "disagreements", "metrics_source", "metrics"})
"""The server object's keys that are not its medians."""


def diagnosis_to_record(diagnosis: Diagnosis) -> dict[str, Any]:
    """The document the store keeps for ``diagnosis``: ``latdoc.diagnosis/2``."""
    return diagnosis_to_dict(diagnosis)


def diagnosis_from_record(record: Mapping[str, Any]) -> Diagnosis:
    """The diagnosis a stored document holds; :class:`ValueError` names a field that is
    missing or of the wrong type."""
    r = Fields(record, "diagnosis")
    if r.text("schema") != DIAGNOSIS_SCHEMA:
        raise ValueError(f"diagnosis: schema {record['schema']!r} is not {DIAGNOSIS_SCHEMA!r}")
    steps = Fields(r.mapping("steps"), "diagnosis.steps")
    length = steps.opt_mapping("length")
    told = steps.has("reasoning") and steps.opt_mapping("reasoning") is not None
    server = r.opt_mapping("server") if r.has("server") else None
    return Diagnosis(
        run_id=r.text("run_id"),
        endpoint=r.text("endpoint"),
        model=r.text("model"),
        scenario=Scenario(r.text("scenario")),
        verdict=_verdict(r.mapping("verdict")),
        shares_ms=_shares(r),
        findings=tuple(_finding(f) for f in r.objects("findings")),
        remedies=tuple(_remedy(x) for x in r.objects("remedies")),
        network=without_ms_twins(steps.opt_numbers("network")),
        length=None if length is None else _curve(length),
        load=without_ms_twins(steps.opt_numbers("load")),
        notes=notes_from_data(record.get("notes")),
        requests=r.integer("requests"),
        failed=r.integer("failed"),
        length_check=_length_check(length),
        network_check=_network_check(steps.opt_mapping("network_rule"))
        if steps.has("network_rule")
        else None,
        noticeable=_bar(r.opt_mapping("negligible")) if r.has("negligible") else None,
        typical_request=_parts(r.opt_mapping("typical_request"))
        if r.has("typical_request")
        else None,
        system=tuple(_item(i) for i in r.objects("system")) if r.has("system") else (),
        server=None if server is None else _server(server),
        reasoning=steps.opt_numbers("reasoning") if told else {},
        requests_by_step={
            str(k): int(v) for k, v in (r.opt_mapping("requests_by_step") or {}).items()
        }
        if r.has("requests_by_step")
        else {},
        workload=_workload(r.opt_mapping("workload")) if r.has("workload") else None,
        longer_prompt=_longer_prompt(r.opt_mapping("longer_prompt"))
        if r.has("longer_prompt")
        else None,
        priorities=_priorities(r.opt_mapping("priorities")) if r.has("priorities") else None,
        cost=_cost(r.opt_mapping("cost")) if r.has("cost") else None,
        reference=_reference(r.opt_mapping("reference")) if r.has("reference") else None,
    )


def _reference(record: Mapping[str, Any] | None) -> tuple[str, str] | None:
    if record is None:
        return None
    r = Fields(record, "diagnosis.reference")
    return r.text("name"), r.text("origin")


def _cost(record: Mapping[str, Any] | None) -> CostSummary | None:
    if record is None:
        return None
    r = Fields(record, "diagnosis.cost")
    price = price_from_dict(r.opt_mapping("price"))
    if price is None:
        return None
    total = record.get("total")
    return CostSummary(
        price=price,
        requests=r.integer("requests"),
        without_usage=r.integer("without_usage"),
        total=None if total is None else float(total),
    )


def _priorities(record: Mapping[str, Any] | None) -> Priorities | None:
    if record is None:
        return None
    r = Fields(record, "diagnosis.priorities")
    order = tuple(Corner(c) for c in r.strings("order"))
    weights = None if r.opt_mapping("weights") is None else r.numbers("weights")
    scenario = r.opt_text("scenario")
    return Priorities(
        order,
        None if weights is None else tuple(weights[c] for c in order),
        None if scenario is None else Scenario(scenario),
    )


def _effects(record: Mapping[str, Any] | None) -> Effects | None:
    if record is None:
        return None
    r = Fields(record, "diagnosis.remedies[].effects")
    return Effects(
        CostChange(r.text("cost")),
        QualityRisk(r.text("quality")),
        cost_why=r.opt_text("cost_why"),
        quality_why=r.opt_text("quality_why"),
    )


def _workload(record: Mapping[str, Any] | None) -> Workload | None:
    if record is None:
        return None
    r = Fields(record, "diagnosis.workload")
    return Workload(
        prompt_tokens=r.opt_integer("prompt_tokens"),
        output_tokens=r.opt_integer("output_tokens"),
        concurrency=r.integer("concurrency"),
        total_ms=r.number("total_ms"),
        short_ms=r.number("short_ms"),
        growth_ms=r.number("growth_ms"),
        source=_prompt_source(r),
        asked_tokens=r.opt_integer("asked_tokens"),
        beyond_alone_ms=r.number("beyond_alone_ms") if r.has("beyond_alone_ms") else 0.0,
    )


def _prompt_source(r: Fields) -> PromptSource:
    """The workload's ``source``; a document from before it was kept says ``told`` only."""
    if not r.has("source"):
        return "told" if r.flag("told") else "seed"
    source = r.text("source")
    if source not in _PROMPT_SOURCES:
        raise ValueError(f"diagnosis.workload.source: {source!r} is none of {_PROMPT_SOURCES}")
    return cast(PromptSource, source)


def _longer_prompt(record: Mapping[str, Any] | None) -> LongerPrompt | None:
    if record is None:
        return None
    r = Fields(record, "diagnosis.longer_prompt")
    return LongerPrompt(
        prompt_tokens=r.integer("prompt_tokens"),
        growth_ms=r.number("growth_ms"),
        growth_interval_ms=_pair(
            record["growth_interval_ms"], "diagnosis.longer_prompt.growth_interval_ms"
        ),
        ratio=r.number("ratio"),
    )


def _kind(text: str, where: str) -> Kind:
    try:
        return Kind(text)
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not a kind of slow latdoc knows") from None


def _kinds(r: Fields, name: str) -> tuple[Kind, ...]:
    return tuple(_kind(k, name) for k in r.strings(name)) if r.has(name) else ()


def _verdict(record: Mapping[str, Any]) -> Verdict:
    """The verdict; a document written before confidence was calibrated has no rule
    confidence, calibration version or bank accuracy, and reads them as None."""
    r = Fields(record, "diagnosis.verdict")
    bank = r.opt_mapping("bank_accuracy") if r.has("bank_accuracy") else None
    accuracy = None if bank is None else Fields(bank, "diagnosis.verdict.bank_accuracy")
    return Verdict(
        _kind(r.text("primary"), "verdict.primary"),
        _kinds(r, "contributing"),
        r.number("confidence"),
        _kinds(r, "negligible"),
        rule_confidence=r.opt_number("rule_confidence") if r.has("rule_confidence") else None,
        confidence_model=r.opt_text("confidence_model") if r.has("confidence_model") else None,
        bank_accuracy=None if accuracy is None else accuracy.number("accuracy"),
        bank_n=None if accuracy is None else accuracy.integer("n"),
        runner_up=_kind(runner, "verdict.runner_up") if (runner := _runner_up(r)) else None,
        near_threshold=bool(record.get("near_threshold", False)),
    )


def _runner_up(r: Fields) -> str | None:
    """The runner-up kind's name; None in documents written before it was kept."""
    return r.opt_text("runner_up") if r.has("runner_up") else None


def _shares(r: Fields) -> dict[Kind, float]:
    return {_kind(k, "shares_ms"): float(v) for k, v in r.numbers("shares_ms").items()}


def _finding(record: Mapping[str, Any]) -> Finding:
    r = Fields(record, "diagnosis.findings[]")
    evidence = without_ms_twins(r.opt_numbers("evidence"))
    return Finding(
        _kind(r.text("kind"), "findings[].kind"),
        r.text("title"),
        r.text("rule"),
        {k: v for k, v in evidence.items() if v is not None},
        share_ms=r.number("share_ms"),
        confidence=r.number("confidence"),
        n=r.opt_integer("n") if r.has("n") else None,
        # A run stored before the reference profile weighed each kind by its share.
        excess_ms=r.number("excess_ms") if r.has("excess_ms") else -1.0,
        beyond_alone_ms=r.number("beyond_alone_ms") if r.has("beyond_alone_ms") else 0.0,
    )


def _remedy(record: Mapping[str, Any]) -> Remedy:
    r = Fields(record, "diagnosis.remedies[]")
    source = r.opt_text("gain_source") if r.has("gain_source") else None
    if source is not None and source not in _GAIN_SOURCES:
        raise ValueError(
            f"diagnosis.remedies[].gain_source: {source!r} is neither of {_GAIN_SOURCES}"
        )
    gain = r.opt_number("predicted_gain_ms") if source is not None else None
    interval = None
    if gain is not None and r.has("gain_interval_ms") and record["gain_interval_ms"] is not None:
        low, high = _pair(record["gain_interval_ms"])
        interval = (low, high)

    def optional(name: str) -> str | None:
        return r.opt_text(name) if r.has(name) else None

    return Remedy(
        r.text("key"),
        r.text("title"),
        _kind(r.text("addresses"), "remedies[].addresses"),
        r.text("change"),
        gain,
        tradeoff=optional("tradeoff"),
        gain_interval_ms=interval,
        gain_source=cast(GainSource, source),
        verify_command=optional("verify_command"),
        how_to_measure=optional("how_to_measure"),
        effects=_effects(r.opt_mapping("effects")) if r.has("effects") else None,
    )


def _pair(value: Any, where: str = "diagnosis.remedies[].gain_interval_ms") -> tuple[float, float]:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or any(type(v) not in (int, float) for v in value)
    ):
        raise ValueError(f"{where}: expected two numbers, got {value!r}")
    return float(value[0]), float(value[1])


def _curve(record: Mapping[str, Any]) -> LengthCurve:
    r = Fields(record, "diagnosis.steps.length")
    points = []
    for point in r.objects("points"):
        p = Fields(point, "diagnosis.steps.length.points[]")
        points.append(LengthPoint(p.integer("prompt_tokens"), p.number("ttft_ms"), p.integer("n")))
    return LengthCurve(
        points=tuple(points),
        a_ms=r.number("a_ms"),
        b_ms_per_1k=r.number("b_ms_per_1k"),
        c_ms_per_1k2=r.number("c_ms_per_1k2"),
        shape=r.text("shape"),
        tokens_estimated=r.flag("tokens_estimated") if r.has("tokens_estimated") else False,
    )


def _length_check(length: Mapping[str, Any] | None) -> LengthCheck | None:
    rule = None if length is None else length.get("rule")
    if rule is None:
        return None
    r = Fields(rule, "diagnosis.steps.length.rule")
    return LengthCheck(
        short_tokens=r.integer("short_tokens"),
        short_ms=r.number("short_ttft_ms"),
        long_tokens=r.integer("long_tokens"),
        long_ms=r.number("long_ttft_ms"),
        ratio=r.number("ratio"),
        growth_ms=r.number("growth_ms"),
        noise_ms=r.number("noise_ms"),
        grows_with_length=r.flag("grows_with_length"),
        fired=r.flag("fired"),
        why=r.text("why"),
        growth_interval_ms=None
        if rule.get("growth_interval_ms") is None
        else _pair(rule["growth_interval_ms"], "diagnosis.steps.length.rule.growth_interval_ms"),
        asked_tokens=r.opt_integer("asked_tokens") if r.has("asked_tokens") else None,
        reference_growth_ms=r.opt_number("reference_growth_ms")
        if r.has("reference_growth_ms")
        else None,
    )


def _network_check(record: Mapping[str, Any] | None) -> NetworkCheck | None:
    if record is None:
        return None
    r = Fields(record, "diagnosis.steps.network_rule")
    bottleneck = r.opt_text("bottleneck")
    if bottleneck is not None and bottleneck not in _BOTTLENECKS:
        raise ValueError(
            f"diagnosis.steps.network_rule.bottleneck: {bottleneck!r} is none of {_BOTTLENECKS}"
        )
    return NetworkCheck(
        setup_ms=r.opt_number("setup_ms"),
        first_byte_ms=r.opt_number("first_byte_ms"),
        slow_setup_ms=r.number("slow_setup_ms"),
        service_ratio=r.number("service_ratio"),
        bottleneck=cast(NetworkBottleneck | None, bottleneck),
        statement=r.text("statement"),
        keepalive_why=r.opt_text("keepalive_saving_why"),
    )


def _bar(record: Mapping[str, Any] | None) -> NoticeableBar | None:
    if record is None:
        return None
    r = Fields(record, "diagnosis.negligible")
    return NoticeableBar(
        typical_ms=r.number("typical_ms"),
        noise_ms=r.number("noise_ms"),
        fraction=r.number("fraction"),
        ttft_noise_ms=r.opt_number("ttft_noise_ms") if r.has("ttft_noise_ms") else None,
        new_connection_ms=r.number("new_connection_ms") if r.has("new_connection_ms") else 0.0,
    )


def _parts(record: Mapping[str, Any] | None) -> RequestParts | None:
    if record is None:
        return None
    r = Fields(record, "diagnosis.typical_request")
    return RequestParts(
        setup_ms=r.number("setup_ms"),
        send_ms=r.number("send_ms"),
        prefill_ms=r.number("prefill_ms"),
        decode_ms=r.number("decode_ms"),
        requests=r.integer("requests"),
        reasoning_ms=r.number("reasoning_ms") if r.has("reasoning_ms") else 0.0,
        server_wait_ms=r.opt_number("server_wait_ms") if r.has("server_wait_ms") else None,
    )


def _item(record: Mapping[str, Any]) -> SystemItem:
    r = Fields(record, "diagnosis.system[]")
    return SystemItem(
        key=r.text("key"),
        name=r.text("name"),
        current=r.opt_text("current"),
        recommended=r.text("recommended"),
        ok=r.opt_flag("ok"),
        why=r.text("why"),
        command=r.text("command"),
        kinds=_kinds(r, "kinds"),
        allows=r.opt_text("allows"),
    )


def _server(record: Mapping[str, Any]) -> ServerAccount:
    r = Fields(record, "diagnosis.server")
    numbers: dict[str, float | None] = {}
    for key, value in record.items():
        if key in _SERVER_KEYS:
            continue
        if type(value) not in (int, float, type(None)):
            raise ValueError(f"diagnosis.server.{key}: expected a number or null, got {value!r}")
        numbers[key] = None if value is None else float(value)
    disagreements = []
    for one in r.objects("disagreements"):
        d = Fields(one, "diagnosis.server.disagreements[]")
        disagreements.append(
            Disagreement(
                d.text("what"), d.integer("requests"), d.integer("of"), d.number("worst_ms")
            )
        )
    return ServerAccount(
        source=r.text("source"),
        numbers=numbers,
        disagreements=tuple(disagreements),
        metrics=r.opt_numbers("metrics"),
        metrics_source=r.opt_text("metrics_source"),
    )
